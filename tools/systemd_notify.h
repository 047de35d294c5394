// Readiness for systemd (Type=notify units, scripts/deploy/systemd): READY=1 once the tool accepts
// connections, STOPPING=1 when it begins to shut down, STATUS= for `systemctl status`. Outside
// systemd (no NOTIFY_SOCKET) sd_notify does nothing, so the tools call it unconditionally.
#pragma once

#include <systemd/sd-daemon.h>

#include <spdlog/spdlog.h>

#include <string>

namespace baton::tools {

// `state` is newline-separated assignments ("READY=1\nSTATUS=listening on ..."); a failure to
// reach systemd is logged, never fatal: the service still runs.
inline void notify_systemd(const std::string& state) {
  const int rc = sd_notify(0, state.c_str());
  if (rc < 0) spdlog::warn("sd_notify failed ({}): systemd may not see this service's state", rc);
}

}  // namespace baton::tools
