// JSON schema -> grammar: each construct accepts the values it should and rejects the others
// (checked by running the compiled grammar over JSON texts), and every unsupported construct
// is a GrammarError naming the keyword and its location.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/json_schema.h"
#include "engine/grammar/matcher.h"

namespace {

using namespace baton::grammar;
using ojson = nlohmann::ordered_json;

struct Schema {
  explicit Schema(const std::string& s, bool strict = true)
      : grammar(std::make_shared<const Grammar>(parse_gbnf(json_schema_to_gbnf(ojson::parse(s), strict)))) {}
  bool accepts(const std::string& text) const {
    Matcher m(grammar);
    return m.accept(text) && m.can_end();
  }
  std::shared_ptr<const Grammar> grammar;
};

std::string schema_error_of(const std::string& s) {
  try {
    json_schema_to_gbnf(ojson::parse(s), true);
  } catch (const GrammarError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("json schema: primitive types", "[grammar]") {
  Schema str(R"({"type": "string"})");
  CHECK(str.accepts(R"("hi \"there\" \u00e9 \n")"));
  CHECK_FALSE(str.accepts(R"("unterminated)"));
  CHECK_FALSE(str.accepts("\"raw\nnewline\""));
  Schema integer(R"({"type": "integer"})");
  CHECK(integer.accepts("-42"));
  CHECK(integer.accepts("0"));
  CHECK_FALSE(integer.accepts("012"));
  CHECK_FALSE(integer.accepts("1.5"));
  Schema number(R"({"type": "number"})");
  CHECK(number.accepts("-1.25e-3"));
  CHECK(number.accepts("7"));
  CHECK_FALSE(number.accepts("1."));
  CHECK(Schema(R"({"type": "boolean"})").accepts("false"));
  CHECK(Schema(R"({"type": "null"})").accepts("null"));
  Schema either(R"({"type": ["integer", "null"]})");
  CHECK(either.accepts("3"));
  CHECK(either.accepts("null"));
  CHECK_FALSE(either.accepts("\"3\""));
}

TEST_CASE("json schema: string lengths, formats, enum and const", "[grammar]") {
  Schema len(R"({"type": "string", "minLength": 2, "maxLength": 3})");
  CHECK(len.accepts(R"("ab")"));
  CHECK(len.accepts(R"("a\nc")"));
  CHECK_FALSE(len.accepts(R"("a")"));
  CHECK_FALSE(len.accepts(R"("abcd")"));
  CHECK(Schema(R"({"type": "string", "format": "date"})").accepts(R"("2024-02-29")"));
  CHECK_FALSE(Schema(R"({"type": "string", "format": "date"})").accepts(R"("2024-13-01")"));
  CHECK(Schema(R"({"type": "string", "format": "date-time"})").accepts(R"("2024-02-29T12:30:00Z")"));
  CHECK(Schema(R"({"type": "string", "format": "time"})").accepts(R"("23:59:01.5+02:00")"));
  CHECK(Schema(R"({"type": "string", "format": "uuid"})").accepts(R"("123e4567-e89b-12d3-a456-426614174000")"));
  Schema e(R"({"enum": ["red", 2, null, {"a": [1]}]})");
  CHECK(e.accepts(R"("red")"));
  CHECK(e.accepts("2"));
  CHECK(e.accepts("null"));
  CHECK(e.accepts(R"({"a":[1]})"));
  CHECK_FALSE(e.accepts(R"("blue")"));
  CHECK(Schema(R"({"const": "only"})").accepts(R"("only")"));
  CHECK_FALSE(Schema(R"({"const": "only"})").accepts(R"("other")"));
}

TEST_CASE("json schema: objects with required, optional and additional properties", "[grammar]") {
  const std::string s = R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"},
                             "c": {"type": "boolean"}}, "required": ["b"]})";
  Schema strict(s, true);
  CHECK(strict.accepts(R"({"b": "x"})"));
  CHECK(strict.accepts(R"({"a": 1, "b": "x", "c": true})"));
  CHECK(strict.accepts(R"({ "a": 1,
  "b": "x" })"));
  CHECK(strict.accepts(R"({"b": "x", "c": false})"));
  CHECK_FALSE(strict.accepts(R"({"a": 1})"));            // b is required
  CHECK_FALSE(strict.accepts(R"({"b": "x", "d": 1})"));  // strict: no additional properties
  CHECK_FALSE(strict.accepts(R"({"b": "x",})"));
  Schema loose(s, false);  // JSON Schema's default: extras allowed
  CHECK(loose.accepts(R"({"b": "x", "d": [1, {"e": null}]})"));
  Schema typed_extra(R"({"type": "object", "additionalProperties": {"type": "integer"}})");
  CHECK(typed_extra.accepts(R"({"x": 1, "y": 2})"));
  CHECK_FALSE(typed_extra.accepts(R"({"x": "1"})"));
  CHECK(Schema(R"({"type": "object", "properties": {}})").accepts("{}"));
  CHECK_FALSE(Schema(R"({"type": "object", "properties": {}})").accepts(R"({"a": 1})"));
}

TEST_CASE("json schema: arrays, nesting, anyOf/oneOf and $ref to $defs (recursive)", "[grammar]") {
  Schema arr(R"({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3})");
  CHECK(arr.accepts("[1]"));
  CHECK(arr.accepts("[1, 2, 3]"));
  CHECK_FALSE(arr.accepts("[]"));
  CHECK_FALSE(arr.accepts("[1, 2, 3, 4]"));
  CHECK_FALSE(arr.accepts(R"(["1"])"));
  CHECK(Schema(R"({"type": "array"})").accepts(R"([1, "a", {"b": []}])"));
  Schema any(R"({"anyOf": [{"type": "integer"}, {"type": "object", "properties": {"k": {"type": "string"}}}]})");
  CHECK(any.accepts("5"));
  CHECK(any.accepts(R"({"k": "v"})"));
  CHECK(Schema(R"({"oneOf": [{"type": "boolean"}, {"type": "null"}]})").accepts("null"));
  Schema tree(R"({"$ref": "#/$defs/node", "$defs": {"node": {"type": "object", "properties": {
      "v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["v"]}}})");
  CHECK(tree.accepts(R"({"v": 1, "kids": [{"v": 2}, {"v": 3, "kids": []}]})"));
  CHECK_FALSE(tree.accepts(R"({"v": 1, "kids": [{"w": 2}]})"));
}

TEST_CASE("json schema: unsupported constructs are errors naming the keyword and where it is", "[grammar]") {
  CHECK_THAT(schema_error_of(R"({"type": "string", "pattern": "^a+$"})"),
             Catch::Contains("'pattern' at '#' is not supported"));
  CHECK_THAT(schema_error_of(R"({"type": "object", "properties": {"n": {"type": "number", "minimum": 0}}})"),
             Catch::Contains("'minimum' at '#/properties/n'"));
  CHECK_THAT(schema_error_of(R"({"type": "object", "properties": {"n": {"type": "integer", "minimum": 5}}})"),
             Catch::Contains("'minimum' 5"));
  CHECK_THAT(schema_error_of(R"({"type": "integer", "maximum": 100})"), Catch::Contains("'maximum' 100"));
  CHECK_THAT(schema_error_of(R"({"not": {"type": "string"}})"), Catch::Contains("'not'"));
  CHECK_THAT(schema_error_of(R"({"type": "string", "format": "email"})"), Catch::Contains("string format \"email\""));
  CHECK_THAT(schema_error_of(R"({"allOf": [{"type": "string"}, {"maxLength": 3}]})"),
             Catch::Contains("'allOf' with more than one"));
  CHECK_THAT(schema_error_of(R"({"$ref": "http://example.com/s.json"})"),
             Catch::Contains("'$ref' \"http://example.com/s.json\""));
  CHECK_THAT(schema_error_of(R"({"$ref": "#/$defs/missing"})"), Catch::Contains("names no definition"));
  CHECK_THAT(schema_error_of(R"({"type": "array", "prefixItems": [{"type": "integer"}]})"),
             Catch::Contains("'prefixItems'"));
  CHECK_THAT(schema_error_of(R"({"type": "array", "uniqueItems": true})"), Catch::Contains("'uniqueItems'"));
  CHECK_THAT(schema_error_of(R"({"type": "tuple"})"), Catch::Contains("type \"tuple\""));
  CHECK_THAT(schema_error_of(R"({"type": "object", "required": ["x"]})"), Catch::Contains("required property \"x\""));
  CHECK(schema_error_of(R"({"type": "string", "description": "ignored", "title": "t", "default": "d"})").empty());
}

TEST_CASE("json schema: integer bounds it can enforce exactly, and zod's safe-integer range as 15 digits",
          "[grammar]") {
  Schema natural(R"({"type": "integer", "minimum": 0})");
  CHECK(natural.accepts("0"));
  CHECK(natural.accepts("1234567890123456"));
  CHECK_FALSE(natural.accepts("-1"));
  Schema positive(R"({"type": "integer", "exclusiveMinimum": 0, "maximum": 99})");
  CHECK(positive.accepts("1"));
  CHECK(positive.accepts("99"));
  CHECK_FALSE(positive.accepts("0"));
  CHECK_FALSE(positive.accepts("100"));
  Schema digit(R"({"type": "integer", "minimum": -9, "maximum": 9})");
  CHECK(digit.accepts("-9"));
  CHECK(digit.accepts("0"));
  CHECK_FALSE(digit.accepts("10"));
  CHECK_FALSE(digit.accepts("-10"));
  // What zod's .int() writes: every value the grammar allows is a safe integer.
  Schema safe(R"({"type": "integer", "minimum": -9007199254740991, "maximum": 9007199254740991})");
  CHECK(safe.accepts("-999999999999999"));
  CHECK(safe.accepts("42"));
  CHECK_FALSE(safe.accepts("1000000000000000"));
}
