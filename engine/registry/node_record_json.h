// NodeRecord <-> JSON, shared by the etcd backend (values under PREFIX/nodes/<id>) and the
// embedded registry's persistence file. The JSON object has exactly the NodeStatus fields:
//   {"node_id": "w1", "host": "10.0.0.2", "port": 9101, "memory_total": 17179869184,
//    "memory_free": 8589934592, "threads": 8, "isa": "avx2", "load": 0.0,
//    "layers": [{"first": 0, "last": 11}], "model_identity": "...", "speed": 12.5}
// Parsing is strict: every field required, no unknown fields, types and ranges checked
// (the bounds and rules of net::check_message), errors name the context and the field.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <string_view>

#include "engine/registry/registry_backend.h"

namespace baton::registry {

// The record as a JSON object (keys sorted, as nlohmann::json stores them).
nlohmann::json node_record_to_json(const NodeRecord& node);

// Compact JSON text of node_record_to_json(). Throws baton::Error if a string field is not
// valid UTF-8.
std::string node_record_to_text(const NodeRecord& node);

// Parses one record. `context` says where it came from ("etcd key /baton/nodes/w1",
// "registry file /var/lib/baton/nodes.json, nodes[2]") and starts every error message.
// Throws baton::FormatError naming the field, what was expected and what was found.
NodeRecord node_record_from_json(const nlohmann::json& value, std::string_view context);

// node_record_from_json() of JSON text; malformed JSON is a FormatError too (with the offset).
NodeRecord node_record_from_text(std::string_view text, std::string_view context);

}  // namespace baton::registry
