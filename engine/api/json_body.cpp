#include "engine/api/json_body.h"

#include <fmt/format.h>

#include "engine/api/api_error.h"

namespace baton::api {

using nlohmann::json;

std::string json_type_of(const json& v) {
  if (v.is_number_integer()) return "integer";
  if (v.is_number()) return "number";
  return v.type_name();
}

json parse_json_object(std::string_view body) {
  // nlohmann's lexer takes a NUL byte for the end of the input: without this check a body
  // with trailing NULs (or anything after one) would be accepted.
  if (auto nul = body.find('\0'); nul != std::string_view::npos)
    throw bad_request("body", fmt::format("the request body is not valid JSON: it has a NUL byte at byte {}", nul));
  json j;
  try {
    j = json::parse(body.begin(), body.end());
  } catch (const json::parse_error& e) {
    throw bad_request("body", fmt::format("the request body is not valid JSON (at byte {}): {}", e.byte, e.what()));
  } catch (const json::exception& e) {  // e.g. a number beyond double's range (out_of_range.406)
    throw bad_request("body", fmt::format("the request body is not valid JSON: {}", e.what()));
  }
  if (!j.is_object())
    throw bad_request("body", fmt::format("the request body must be a JSON object, got {}", json_type_of(j)));
  return j;
}

const json* json_field(const json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

void json_wrong_type(const std::string& name, const char* expected, const json& v) {
  throw bad_request(name, fmt::format("'{}' must be {}, got {}", name, expected, json_type_of(v)));
}

}  // namespace baton::api
