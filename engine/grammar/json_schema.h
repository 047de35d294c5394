// JSON schema -> GBNF text (then parse_gbnf), for structured output and forced tool calls.
//
// Supported: type (string, number, integer, boolean, null, object, array, or a list of them),
// properties + required (properties in the order given: pass an ordered_json; optional ones may be left out),
// additionalProperties (false, true or a schema; when absent: false if `strict`, else true as
// JSON Schema says), items, minItems/maxItems, minLength/maxLength, format (date, time,
// date-time, uuid), enum, const, anyOf/oneOf (oneOf as anyOf: exclusivity is not checked),
// allOf with one member, $ref to #/$defs/... or #/definitions/... (recursion allowed), and
// nesting. Annotations (title, description, default, examples, $schema, $id, $comment) are
// ignored. Anything else that constrains the value (pattern, minimum, not, if/then/else,
// prefixItems, uniqueItems, patternProperties, other formats ...) is a GrammarError naming the
// keyword and where it is (as a JSON pointer).
//
// Numbers: up to 16 integer digits, 16 fraction digits and a 3-digit exponent; whitespace
// between tokens: none, one space, or a newline and up to 20 spaces/tabs; so every value the
// grammar allows is finite except strings and arrays without maxLength/maxItems.
#pragma once

#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace baton::grammar {

std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema, bool strict);
// For composing grammars (a tool call around the arguments' schema): the rules of `schema`
// with the start rule `root_name` and helper rules named "<root_name>-...", and the shared
// primitives it uses added to `primitives_used`; primitive_rules() writes those once.
std::string json_schema_rules(const nlohmann::ordered_json& schema, bool strict, const std::string& root_name,
                              std::set<std::string>& primitives_used);
std::string primitive_rules(const std::set<std::string>& primitives_used);
// Any JSON object ({"type": "json_object"} response format).
std::string json_object_gbnf();
// `s` as a GBNF string literal, quotes included.
std::string gbnf_literal(const std::string& s);

}  // namespace baton::grammar
