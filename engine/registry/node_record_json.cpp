// NodeRecord <-> JSON: one field table drives both directions' checks.
#include "engine/registry/node_record_json.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>

#include "engine/base/error.h"

namespace baton::registry {
namespace {

using nlohmann::json;

constexpr const char* kFields[] = {"node_id", "host", "port",   "memory_total",   "memory_free", "threads",
                                   "isa",     "load", "layers", "model_identity", "speed",       "readings"};

// Short rendering of a JSON value for error messages.
std::string show(const json& v) {
  std::string s = v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

class FieldReader {
 public:
  FieldReader(const json& object, std::string_view context) : object_(object), context_(context) {}

  const json& require(const char* field) const {
    auto it = object_.find(field);
    if (it == object_.end()) fail<FormatError>("{}: node record has no field '{}'", context_, field);
    return *it;
  }

  std::string string(const char* field, size_t max_bytes, bool allow_empty) const {
    const json& v = require(field);
    if (!v.is_string()) fail<FormatError>("{}: field '{}': expected a string, got {}", context_, field, show(v));
    std::string s = v.get<std::string>();
    if (!allow_empty && s.empty()) fail<FormatError>("{}: field '{}': must not be empty", context_, field);
    if (s.size() > max_bytes)
      fail<FormatError>("{}: field '{}': {} bytes, at most {} allowed", context_, field, s.size(), max_bytes);
    return s;
  }

  uint64_t unsigned_int(const char* field, uint64_t max) const { return unsigned_value(require(field), field, max); }

  uint64_t unsigned_value(const json& v, std::string_view field, uint64_t max) const {
    bool non_negative = v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
    if (!non_negative)
      fail<FormatError>("{}: field '{}': expected an integer in 0..{}, got {}", context_, field, max, show(v));
    uint64_t x = v.get<uint64_t>();
    if (x > max) fail<FormatError>("{}: field '{}': {} is out of range 0..{}", context_, field, x, max);
    return x;
  }

  float non_negative_float(const char* field) const {
    const json& v = require(field);
    if (!v.is_number()) fail<FormatError>("{}: field '{}': expected a number, got {}", context_, field, show(v));
    double d = v.get<double>();
    if (!std::isfinite(d) || d < 0 || d > std::numeric_limits<float>::max())
      fail<FormatError>("{}: field '{}': expected a finite number >= 0, got {}", context_, field, show(v));
    return static_cast<float>(d);
  }

  std::vector<net::LayerRange> layers() const {
    const json& v = require("layers");
    if (!v.is_array())
      fail<FormatError>("{}: field 'layers': expected an array of {{\"first\", \"last\"}}, got {}", context_, show(v));
    if (v.size() > net::kMaxListItems)
      fail<FormatError>("{}: field 'layers': {} ranges, at most {} allowed", context_, v.size(), net::kMaxListItems);
    std::vector<net::LayerRange> out;
    for (size_t i = 0; i < v.size(); ++i) {
      const json& r = v[i];
      std::string name = fmt::format("layers[{}]", i);
      if (!r.is_object() || r.size() != 2 || !r.contains("first") || !r.contains("last"))
        fail<FormatError>("{}: field '{}': expected {{\"first\": N, \"last\": N}}, got {}", context_, name, show(r));
      net::LayerRange range;
      range.first =
          static_cast<uint32_t>(unsigned_value(r["first"], name + ".first", std::numeric_limits<uint32_t>::max()));
      range.last =
          static_cast<uint32_t>(unsigned_value(r["last"], name + ".last", std::numeric_limits<uint32_t>::max()));
      if (range.first > range.last)
        fail<FormatError>("{}: field '{}': first {} > last {}", context_, name, range.first, range.last);
      out.push_back(range);
    }
    return out;
  }

  // Optional (added within protocol 3): {"name": number, ...}, finite values.
  std::vector<net::StatEntry> readings() const {
    auto it = object_.find("readings");
    if (it == object_.end()) return {};
    if (!it->is_object())
      fail<FormatError>("{}: field 'readings': expected an object of numbers, got {}", context_, show(*it));
    if (it->size() > net::kMaxListItems)
      fail<FormatError>("{}: field 'readings': {} entries, at most {} allowed", context_, it->size(),
                        net::kMaxListItems);
    std::vector<net::StatEntry> out;
    for (auto r = it->begin(); r != it->end(); ++r) {
      if (r.key().empty() || r.key().size() > net::kMaxNameBytes)
        fail<FormatError>("{}: field 'readings': a name must have 1..{} bytes", context_, net::kMaxNameBytes);
      if (!r->is_number() || !std::isfinite(r->get<double>()))
        fail<FormatError>("{}: field 'readings.{}': expected a finite number, got {}", context_, r.key(), show(*r));
      out.push_back({r.key(), r->get<double>()});
    }
    return out;
  }

 private:
  const json& object_;
  std::string_view context_;
};

}  // namespace

json node_record_to_json(const NodeRecord& node) {
  json layers = json::array();
  for (const net::LayerRange& r : node.layers) layers.push_back({{"first", r.first}, {"last", r.last}});
  json out = {{"node_id", node.node_id},
              {"host", node.host},
              {"port", node.port},
              {"memory_total", node.memory_total},
              {"memory_free", node.memory_free},
              {"threads", node.threads},
              {"isa", node.isa},
              {"load", node.load},
              {"layers", std::move(layers)},
              {"model_identity", node.model_identity},
              {"speed", node.speed}};
  // Only when there are some: a record without readings stays readable by older coordinators.
  if (!node.readings.empty()) {
    json readings = json::object();
    for (const auto& r : node.readings) readings[r.name] = r.value;
    out["readings"] = std::move(readings);
  }
  return out;
}

std::string node_record_to_text(const NodeRecord& node) {
  try {
    return node_record_to_json(node).dump();
  } catch (const json::exception& e) {  // a string field that is not UTF-8
    fail("node record '{}': cannot be written as JSON: {}", node.node_id, e.what());
  }
}

NodeRecord node_record_from_json(const json& value, std::string_view context) {
  if (!value.is_object()) fail<FormatError>("{}: node record must be a JSON object, got {}", context, show(value));
  for (auto it = value.begin(); it != value.end(); ++it) {
    bool known = false;
    for (const char* f : kFields) known = known || it.key() == f;
    if (!known) fail<FormatError>("{}: node record has unknown field '{}'", context, it.key());
  }
  FieldReader in(value, context);
  NodeRecord node;
  node.node_id = in.string("node_id", net::kMaxNameBytes, false);
  node.host = in.string("host", net::kMaxNameBytes, false);
  node.port = static_cast<uint16_t>(in.unsigned_int("port", 65535));
  node.memory_total = in.unsigned_int("memory_total", std::numeric_limits<uint64_t>::max());
  node.memory_free = in.unsigned_int("memory_free", std::numeric_limits<uint64_t>::max());
  node.threads = static_cast<uint32_t>(in.unsigned_int("threads", std::numeric_limits<uint32_t>::max()));
  node.isa = in.string("isa", net::kMaxNameBytes, true);
  node.load = in.non_negative_float("load");
  node.layers = in.layers();
  node.model_identity = in.string("model_identity", net::kMaxTextBytes, true);
  node.speed = in.non_negative_float("speed");
  node.readings = in.readings();
  return node;
}

NodeRecord node_record_from_text(std::string_view text, std::string_view context) {
  json value;
  try {
    value = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    fail<FormatError>("{}: node record is not valid JSON (at byte {}): {}", context, e.byte, e.what());
  } catch (const json::exception& e) {  // e.g. a number beyond double's range
    fail<FormatError>("{}: node record is not valid JSON: {}", context, e.what());
  }
  return node_record_from_json(value, context);
}

}  // namespace baton::registry
