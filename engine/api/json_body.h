// Reading a request's JSON body the one way every endpoint does: the body must be one JSON
// object (a NUL byte, which nlohmann's lexer takes for the end of input, is refused), a field set
// to null counts as absent, and a wrong type is a 400 naming the field.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace baton::api {

// The body as a JSON object; throws ApiError 400 (param "body") saying why it is not one.
nlohmann::json parse_json_object(std::string_view body);
// The field, or nullptr when absent or null.
const nlohmann::json* json_field(const nlohmann::json& obj, const char* name);
// "integer", "number", "string", ... for error messages.
std::string json_type_of(const nlohmann::json& v);
// Throws ApiError 400: "'name' must be <expected>, got <type>".
[[noreturn]] void json_wrong_type(const std::string& name, const char* expected, const nlohmann::json& v);

}  // namespace baton::api
