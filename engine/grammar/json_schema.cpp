// Each schema node becomes a GBNF expression; nodes that need a name (objects, arrays, $defs)
// get a rule named after their JSON pointer. The primitives (string, number, ws ...) are
// written once, when first used.
#include "engine/grammar/json_schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <vector>

#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/grammar.h"
#include "engine/grammar/matcher.h"

namespace baton::grammar {
namespace {

using json = nlohmann::ordered_json;

const std::map<std::string, std::string>& primitives() {
  static const std::map<std::string, std::string> p = {
      {"ws", R"(| " " | "\n" [ \t]{0,20})"},
      {"char", R"([^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}))"},
      {"string", R"("\"" char* "\"")"},
      {"integer", R"("-"? ("0" | [1-9] [0-9]{0,15}))"},
      {"number", R"("-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?)"},
      {"boolean", R"("true" | "false")"},
      {"null", R"("null")"},
      {"value", R"(object | array | string | number | boolean | null)"},
      {"object", R"("{" ws (string ws ":" ws value ws ("," ws string ws ":" ws value ws)*)? "}")"},
      {"array", R"("[" ws (value ws ("," ws value ws)*)? "]")"},
      {"date", R"([0-9]{4} "-" ("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | [1-2] [0-9] | "3" [0-1]))"},
      {"time",
       R"(([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,6})? ("Z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9]))"},
      {"uuid", R"([0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12})"},
  };
  return p;
}
// What each primitive uses.
const std::map<std::string, std::vector<std::string>>& primitive_deps() {
  static const std::map<std::string, std::vector<std::string>> d = {
      {"string", {"char"}},
      {"value", {"object", "array", "string", "number", "boolean", "null"}},
      {"object", {"ws", "string", "value"}},
      {"array", {"ws", "value"}},
  };
  return d;
}

const std::set<std::string>& ignored_keywords() {
  static const std::set<std::string> k = {"title",     "description", "default",  "examples",
                                          "$schema",   "$id",         "$comment", "deprecated",
                                          "readOnly",  "writeOnly",   "$defs",    "definitions",
                                          "type",      "properties",  "required", "additionalProperties",
                                          "items",     "minItems",    "maxItems", "minLength",
                                          "maxLength", "format",      "enum",     "const",
                                          "anyOf",     "oneOf",       "allOf",    "$ref",
                                          "strict",    "nullable"};
  return k;
}

class Compiler {
 public:
  Compiler(const json& root, bool strict, std::string prefix, std::set<std::string>& used)
      : root_(root), strict_(strict), prefix_(std::move(prefix)), used_(used) {}

  std::string compile(const std::string& root_name) {
    std::string root_expr = visit(root_, "");
    std::string out = root_name + " ::= " + root_expr + "\n";
    for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
    return out;
  }

 private:
  [[noreturn]] static void unsupported(const std::string& path, const std::string& what) {
    fail<GrammarError>("JSON schema: {} at '{}' is not supported", what, path.empty() ? "#" : "#" + path);
  }

  std::string use(const std::string& primitive) {
    if (used_.insert(primitive).second) {
      auto it = primitive_deps().find(primitive);
      if (it != primitive_deps().end())
        for (const std::string& d : it->second) use(d);
    }
    return primitive;
  }

  std::string new_rule(const std::string& path, std::string body) {
    std::string name;
    for (char c : path) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
    while (!name.empty() && name[0] == '-') name.erase(0, 1);
    if (name.empty()) name = "node";
    name = prefix_ + "-" + name;
    std::string unique = name;
    for (int i = 2; rules_.count(unique) || primitives().count(unique); ++i) unique = fmt::format("{}-{}", name, i);
    rules_[unique] = std::move(body);
    return unique;
  }

  static std::string literal_of(const json& v) { return gbnf_literal(v.dump()); }

  std::string visit(const json& s, const std::string& path) {
    if (s.is_boolean()) {
      if (!s.get<bool>()) unsupported(path, "the schema false (nothing matches)");
      return use("value");
    }
    if (!s.is_object()) unsupported(path, fmt::format("a schema that is a {}", s.type_name()));
    const bool integer_type = s.contains("type") && s["type"] == "integer";
    for (const auto& [key, v] : s.items()) {
      if (ignored_keywords().count(key)) continue;
      if (key == "uniqueItems" && v == false) continue;
      if (integer_type && v.is_number() &&
          (key == "minimum" || key == "maximum" || key == "exclusiveMinimum" || key == "exclusiveMaximum"))
        continue;  // visit_integer() enforces them or names them
      if (key == "minimum" || key == "maximum" || key == "exclusiveMinimum" || key == "exclusiveMaximum" ||
          key == "multipleOf" || key == "pattern" || key == "not" || key == "if" || key == "then" || key == "else" ||
          key == "prefixItems" || key == "uniqueItems" || key == "patternProperties" || key == "propertyNames" ||
          key == "minProperties" || key == "maxProperties" || key == "dependentRequired" || key == "dependentSchemas" ||
          key == "contains" || key == "minContains" || key == "maxContains" || key == "unevaluatedProperties" ||
          key == "unevaluatedItems" || key == "additionalItems" || key == "contentEncoding" ||
          key == "contentMediaType" || key == "dependencies")
        unsupported(path, fmt::format("'{}'", key));
    }
    if (auto it = s.find("$ref"); it != s.end()) return visit_ref(*it, path);
    if (auto it = s.find("const"); it != s.end()) return literal_of(*it);
    if (auto it = s.find("enum"); it != s.end()) {
      if (!it->is_array() || it->empty()) unsupported(path + "/enum", "an 'enum' that is not a non-empty array");
      std::string alts;
      for (const json& v : *it) alts += (alts.empty() ? "" : " | ") + literal_of(v);
      return "(" + alts + ")";
    }
    for (const char* key : {"anyOf", "oneOf", "allOf"}) {
      auto it = s.find(key);
      if (it == s.end()) continue;
      if (!it->is_array() || it->empty())
        unsupported(path + "/" + key, fmt::format("a '{}' that is not a non-empty array", key));
      if (std::string(key) == "allOf" && it->size() != 1)
        unsupported(path + "/allOf", "'allOf' with more than one schema");
      std::string alts;
      for (size_t i = 0; i < it->size(); ++i)
        alts += (alts.empty() ? "" : " | ") + visit((*it)[i], fmt::format("{}/{}/{}", path, key, i));
      return "(" + alts + ")";
    }
    auto type = s.find("type");
    if (type == s.end()) {
      if (s.contains("properties") || s.contains("additionalProperties")) return visit_typed(s, "object", path);
      if (s.contains("items")) return visit_typed(s, "array", path);
      return use("value");
    }
    if (type->is_string()) return visit_typed(s, type->get<std::string>(), path);
    if (!type->is_array() || type->empty())
      unsupported(path + "/type", "a 'type' that is neither a string nor a list of them");
    std::string alts;
    for (const json& t : *type) {
      if (!t.is_string()) unsupported(path + "/type", "a 'type' entry that is not a string");
      alts += (alts.empty() ? "" : " | ") + visit_typed(s, t.get<std::string>(), path);
    }
    return "(" + alts + ")";
  }

  std::string visit_ref(const json& ref, const std::string& path) {
    if (!ref.is_string()) unsupported(path + "/$ref", "a '$ref' that is not a string");
    const std::string r = ref.get<std::string>();
    std::string name;
    for (const char* prefix : {"#/$defs/", "#/definitions/"})
      if (r.rfind(prefix, 0) == 0) name = r.substr(std::string(prefix).size());
    if (name.empty() || name.find('/') != std::string::npos)
      unsupported(path + "/$ref", fmt::format("'$ref' \"{}\" (only #/$defs/NAME and #/definitions/NAME)", r));
    auto done = refs_.find(r);
    if (done != refs_.end()) return done->second;
    const json* defs = nullptr;
    for (const char* key : {"$defs", "definitions"})
      if (root_.is_object() && root_.contains(key) && root_[key].is_object() && root_[key].contains(name))
        defs = &root_[key];
    if (!defs) fail<GrammarError>("JSON schema: '$ref' \"{}\" at '#{}' names no definition", r, path);
    // Named before it is compiled, so a recursive reference finds it.
    std::string rule = new_rule("ref/" + name, "");
    refs_[r] = rule;
    std::string body = visit((*defs)[name], r.substr(1));
    rules_[rule] = body;
    return rule;
  }

  std::string visit_typed(const json& s, const std::string& type, const std::string& path) {
    if (type == "string") return visit_string(s, path);
    if (type == "integer") return visit_integer(s, path);
    if (type == "number" || type == "boolean" || type == "null") return use(type);
    if (type == "object") return visit_object(s, path);
    if (type == "array") return visit_array(s, path);
    unsupported(path + "/type", fmt::format("type \"{}\"", type));
  }

  // An integer's bounds, in the forms a digit grammar enforces exactly: a lower bound of 0
  // (no sign) or 1 (no sign, no 0), bounds of +-(10^k - 1) (at most k digits), and bounds at
  // or beyond +-(10^15 - 1) -- such as JavaScript's safe-integer range that zod writes for
  // .int() -- as at most 15 digits (a subset of the range: every value it allows is in it).
  // Other bounds are a GrammarError naming the keyword.
  std::string visit_integer(const json& s, const std::string& path) {
    constexpr double kWide = 999999999999999.0;  // 10^15 - 1
    auto bound = [&](const char* inclusive, const char* exclusive, double step) -> std::optional<double> {
      std::optional<double> b;
      if (auto it = s.find(inclusive); it != s.end()) b = it->get<double>();
      if (auto it = s.find(exclusive); it != s.end()) {
        const double e = it->get<double>() + step;
        b = b ? (step > 0 ? std::max(*b, e) : std::min(*b, e)) : e;
      }
      return b;
    };
    const std::optional<double> lo = bound("minimum", "exclusiveMinimum", 1);
    const std::optional<double> hi = bound("maximum", "exclusiveMaximum", -1);
    if (!lo && !hi) return use("integer");
    // Digits allowed by a bound of magnitude m: k when m == 10^k - 1 (k <= 15), 15 when m is wider.
    auto digits_for = [&](double m, const char* key) -> int {
      if (m >= kWide) return 15;
      double p = 9;
      for (int k = 1; k <= 15; ++k, p = p * 10 + 9)
        if (m == p) return k;
      unsupported(path,
                  fmt::format("'{}' {} (integer bounds must be 0, 1, +-(10^k - 1) or at least +-(10^15 - 1))", key, m));
    };
    bool negative = true, zero = true;
    int neg_digits = 16, pos_digits = 16;
    if (lo) {
      if (*lo == 0) negative = false;
      else if (*lo == 1) negative = zero = false;
      else if (*lo < 0) neg_digits = digits_for(-*lo, "minimum");
      else
        unsupported(path, fmt::format("'minimum' {} (integer bounds must be 0, 1, +-(10^k - 1) or at least "
                                      "+-(10^15 - 1))",
                                      *lo));
    }
    if (hi) {
      if (*hi < 0 || (*hi == 0 && !zero))
        unsupported(path, fmt::format("'maximum' {} below the minimum or negative", *hi));
      pos_digits = *hi == 0 ? 0 : digits_for(*hi, "maximum");
    }
    auto digits = [](int n) { return n <= 1 ? std::string("[1-9]") : fmt::format("[1-9] [0-9]{{0,{}}}", n - 1); };
    std::vector<std::string> alts;
    if (zero) alts.push_back("\"0\"");
    if (pos_digits > 0) alts.push_back(digits(pos_digits));
    if (negative) alts.push_back("\"-\" " + digits(neg_digits));
    std::string body;
    for (size_t i = 0; i < alts.size(); ++i) body += (i ? " | " : "") + alts[i];
    return new_rule(path.empty() ? "integer" : path, body);
  }

  static std::optional<uint64_t> count(const json& s, const char* key, const std::string& path) {
    auto it = s.find(key);
    if (it == s.end()) return std::nullopt;
    if (!it->is_number_unsigned() || it->get<uint64_t>() > 10000)
      fail<GrammarError>("JSON schema: '{}' at '#{}' must be an integer in [0, 10000]", key, path);
    return it->get<uint64_t>();
  }

  static std::string repeat(const std::string& item, uint64_t min, std::optional<uint64_t> max) {
    if (!max) return fmt::format("{}{{{},}}", item, min);
    return fmt::format("{}{{{},{}}}", item, min, *max);
  }

  std::string visit_string(const json& s, const std::string& path) {
    if (auto it = s.find("format"); it != s.end()) {
      const std::string f = it->is_string() ? it->get<std::string>() : it->dump();
      if (f == "date" || f == "time" || f == "uuid") return "\"\\\"\" " + use(f) + " \"\\\"\"";
      if (f == "date-time") return "\"\\\"\" " + use("date") + " \"T\" " + use("time") + " \"\\\"\"";
      unsupported(path + "/format", fmt::format("string format \"{}\" (date, time, date-time and uuid are)", f));
    }
    auto min = count(s, "minLength", path), max = count(s, "maxLength", path);
    if (!min && !max) return use("string");
    if (max && *max < min.value_or(0)) fail<GrammarError>("JSON schema: maxLength < minLength at '#{}'", path);
    return "\"\\\"\" " + repeat(use("char"), min.value_or(0), max) + " \"\\\"\"";
  }

  std::string visit_array(const json& s, const std::string& path) {
    const std::string item = s.contains("items") ? visit(s["items"], path + "/items") : use("value");
    auto min = count(s, "minItems", path).value_or(0);
    auto max = count(s, "maxItems", path);
    if (max && *max < min) fail<GrammarError>("JSON schema: maxItems < minItems at '#{}'", path);
    use("ws");
    std::string body;
    if (max && *max == 0) {
      body = R"("[" ws "]")";
    } else {
      const std::string more = "(\",\" ws " + item + " ws)";
      std::optional<uint64_t> rest_max = max ? std::optional<uint64_t>(*max - 1) : std::nullopt;
      const std::string seq = item + " ws " + repeat(more, min > 0 ? min - 1 : 0, rest_max);
      body = "\"[\" ws " + (min == 0 ? "(" + seq + ")?" : seq) + " \"]\"";
    }
    return new_rule(path.empty() ? "array" : path, body);
  }

  std::string visit_object(const json& s, const std::string& path) {
    std::vector<std::pair<std::string, bool>> props;  // name, required
    std::vector<std::string> values;
    std::set<std::string> required;
    if (auto it = s.find("required"); it != s.end()) {
      if (!it->is_array()) unsupported(path + "/required", "a 'required' that is not an array");
      for (const json& r : *it) {
        if (!r.is_string()) unsupported(path + "/required", "a 'required' entry that is not a string");
        required.insert(r.get<std::string>());
      }
    }
    use("ws");
    if (auto it = s.find("properties"); it != s.end()) {
      if (!it->is_object()) unsupported(path + "/properties", "'properties' that is not an object");
      for (const auto& [name, sub] : it->items()) {
        props.emplace_back(name, required.count(name) > 0);
        values.push_back(visit(sub, path + "/properties/" + name));
      }
    }
    for (const std::string& r : required) {
      bool known = false;
      for (const auto& p : props) known |= p.first == r;
      if (!known)
        fail<GrammarError>("JSON schema: required property \"{}\" at '#{}' has no schema in 'properties'", r, path);
    }
    // Extra keys: additionalProperties false / true / a schema; absent = !strict.
    std::string extra_value;
    auto ap = s.find("additionalProperties");
    bool extras = !strict_;
    if (ap != s.end()) {
      if (ap->is_boolean()) extras = ap->get<bool>();
      else if (ap->is_object()) extras = true;
      else unsupported(path + "/additionalProperties", "'additionalProperties' that is neither a boolean nor a schema");
    }
    if (extras)
      extra_value = ap != s.end() && ap->is_object() ? visit(*ap, path + "/additionalProperties") : use("value");
    const std::string extra_kv = extra_value.empty() ? "" : use("string") + " ws \":\" ws " + extra_value + " ws";

    // members(i, first): the properties from i on; `first` = nothing written yet (no comma).
    const std::string base = path.empty() ? "object" : path;
    std::map<std::pair<size_t, bool>, std::string> names;
    std::function<std::string(size_t, bool)> members = [&](size_t i, bool first) -> std::string {
      auto key = std::make_pair(i, first);
      if (auto it = names.find(key); it != names.end()) return it->second;
      std::string body;
      if (i == props.size()) {
        if (extra_kv.empty()) return names[key] = "";
        body = first ? "(" + extra_kv + " (\",\" ws " + extra_kv + ")*)?" : "(\",\" ws " + extra_kv + ")*";
      } else {
        const std::string comma = first ? "" : "\",\" ws ";
        const std::string kv = gbnf_literal(json(props[i].first).dump()) + " ws \":\" ws " + values[i] + " ws";
        const std::string rest = members(i + 1, false);
        body = comma + kv + (rest.empty() ? "" : " " + rest);
        if (!props[i].second) {
          const std::string skip = members(i + 1, first);
          body = "(" + body + ") | " + (skip.empty() ? "" : skip);
          body = "(" + body + ")";
        }
      }
      return names[key] = new_rule(fmt::format("{}/{}{}", base, i, first ? "f" : "n"), body);
    };
    const std::string m = members(0, true);
    return new_rule(base, "\"{\" ws " + (m.empty() ? "" : m + " ") + "\"}\"");
  }

  const json& root_;
  bool strict_;
  std::string prefix_;
  std::set<std::string>& used_;
  std::map<std::string, std::string> rules_;
  std::map<std::string, std::string> refs_;
};

}  // namespace

std::string gbnf_literal(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"') out += "\\\"";
    else if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7F) out += fmt::format("\\x{:02X}", c);
    else out += ch;
  }
  return out + "\"";
}

std::string json_schema_rules(const nlohmann::ordered_json& schema, bool strict, const std::string& root_name,
                              std::set<std::string>& primitives_used) {
  return Compiler(schema, strict, root_name, primitives_used).compile(root_name);
}

std::string primitive_rules(const std::set<std::string>& primitives_used) {
  std::string out;
  for (const std::string& p : primitives_used) out += p + " ::= " + primitives().at(p) + "\n";
  return out;
}

std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema, bool strict) {
  std::set<std::string> used;
  std::string gbnf = json_schema_rules(schema, strict, "root", used);  // fills `used` first
  gbnf += primitive_rules(used);
  // Large counts (minItems, maxLength ... up to 10000 each) and nested anyOf can add up to a
  // grammar past the parser's or the matcher's bounds: refused here, naming the schema, rather
  // than when generation starts.
  try {
    Matcher start(std::make_shared<const Grammar>(parse_gbnf(gbnf)));
  } catch (const GrammarLimitError& e) {
    fail<GrammarLimitError>("JSON schema: the grammar it compiles to is too large or too ambiguous: {}", e.what());
  } catch (const GrammarError& e) {
    // Not the client's fault: the compiler must only write valid GBNF (the fuzz target checks it).
    throw std::logic_error(fmt::format("the JSON schema compiler wrote GBNF its parser refuses: {}", e.what()));
  }
  return gbnf;
}

std::string json_object_gbnf() { return json_schema_to_gbnf(json{{"type", "object"}}, false); }

}  // namespace baton::grammar
