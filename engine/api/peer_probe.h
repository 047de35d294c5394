// Seeing that an HTTP client went away while a non-streaming request is still being generated.
// cpp-httplib 0.11 gives a handler no socket and no disconnect callback, so the handler finds its
// connection's socket among this process's descriptors by its two endpoints (the Request's
// local and remote address and port, which identify a TCP connection), then peeks at it.
//
// Safe because the connection's socket belongs to the thread running the handler: httplib
// closes it only after the handler returns, so the descriptor found cannot be reused meanwhile.
// Linux-only (/proc/self/fd, POLLRDHUP).
#pragma once

#include <string>

namespace baton::api {

class PeerProbe {
 public:
  // Finds the connected TCP socket whose local end is local_addr:local_port and whose peer is
  // remote_addr:remote_port (numeric hosts, as httplib reports them). Not found (or no
  // /proc/self/fd): a probe that never reports a disconnect.
  PeerProbe(const std::string& local_addr, int local_port, const std::string& remote_addr, int remote_port);

  bool found() const { return fd_ >= 0; }
  // True once the peer has closed or reset the connection (end of stream or an error on the
  // socket); bytes the client already sent (a pipelined request) are left unread. Never blocks.
  bool peer_closed() const;

 private:
  int fd_ = -1;
};

}  // namespace baton::api
