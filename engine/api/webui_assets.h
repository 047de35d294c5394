// The web UI's files (engine/api/webui/), compiled into the binary by cmake/embed_assets.cmake:
// GET / serves index.html, GET /webui/<name> the others. No file is read at run time.
#pragma once

#include <span>
#include <string_view>

namespace baton::api {

struct WebAsset {
  std::string_view name;  // file name relative to engine/api/webui/, e.g. "chat.js"
  std::string_view body;
};

// Every embedded file, sorted by name (defined in the generated webui_assets.cpp).
std::span<const WebAsset> web_assets();

}  // namespace baton::api
