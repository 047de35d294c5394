// NodeRecord <-> JSON: exact round trip, and strict parsing whose errors name the field.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "engine/base/error.h"
#include "engine/registry/node_record_json.h"

using namespace baton;
using namespace baton::registry;
using nlohmann::json;

namespace {

NodeRecord sample() {
  NodeRecord n;
  n.node_id = "worker-1";
  n.host = "10.0.0.2";
  n.port = 9101;
  n.memory_total = 17179869184ull;
  n.memory_free = 0xfffffffffffffff0ull;  // beyond double precision: must stay exact
  n.threads = 8;
  n.isa = "avx2";
  n.load = 0.25f;
  n.layers = {{0, 11}, {20, 20}};
  n.model_identity = "llama/stories260K sha256:0123abcd";
  n.speed = 123.456f;  // not exactly representable in decimal: float -> JSON -> float is exact
  return n;
}

// Parses sample()'s JSON after `edit`, expecting a FormatError containing every `needle`.
void expect_error(const std::function<void(json&)>& edit, std::vector<std::string> needles) {
  json j = node_record_to_json(sample());
  edit(j);
  try {
    node_record_from_json(j, "test file nodes[3]");
    FAIL("parsed: " << j.dump());
  } catch (const FormatError& e) {
    std::string what = e.what();
    CHECK(what.find("test file nodes[3]") != std::string::npos);
    for (const auto& n : needles) CHECK_THAT(what, Catch::Contains(n));
  }
}

}  // namespace

TEST_CASE("node record JSON round trip is exact") {
  NodeRecord n = sample();
  CHECK(node_record_from_text(node_record_to_text(n), "t") == n);
  CHECK(node_record_from_json(node_record_to_json(n), "t") == n);
  json j = json::parse(node_record_to_text(n));
  CHECK(j["memory_free"].get<uint64_t>() == 0xfffffffffffffff0ull);
  CHECK(j["layers"] == json::parse(R"([{"first":0,"last":11},{"first":20,"last":20}])"));
  CHECK(j.size() == 11);

  NodeRecord empty_lists = n;
  empty_lists.layers.clear();
  empty_lists.isa = "";
  empty_lists.model_identity = "";
  CHECK(node_record_from_text(node_record_to_text(empty_lists), "t") == empty_lists);
  // Integers built in code (signed) are accepted like parsed ones.
  json signed_port = node_record_to_json(n);
  signed_port["port"] = static_cast<int>(9101);
  CHECK(node_record_from_json(signed_port, "t").port == 9101);
}

TEST_CASE("node record JSON errors name the field") {
  expect_error([](json& j) { j.erase("host"); }, {"no field 'host'"});
  expect_error([](json& j) { j["colour"] = "red"; }, {"unknown field 'colour'"});
  expect_error([](json& j) { j["port"] = "9101"; }, {"'port'", "integer", "\"9101\""});
  expect_error([](json& j) { j["port"] = 70000; }, {"'port'", "70000", "0..65535"});
  expect_error([](json& j) { j["port"] = 1.5; }, {"'port'", "1.5"});
  expect_error([](json& j) { j["memory_total"] = -1; }, {"'memory_total'", "-1"});
  expect_error([](json& j) { j["threads"] = 5000000000ull; }, {"'threads'", "out of range"});
  expect_error([](json& j) { j["node_id"] = ""; }, {"'node_id'", "empty"});
  expect_error([](json& j) { j["host"] = 7; }, {"'host'", "string"});
  expect_error([](json& j) { j["node_id"] = std::string(300, 'x'); }, {"'node_id'", "300 bytes", "256"});
  expect_error([](json& j) { j["load"] = -0.5; }, {"'load'", ">= 0"});
  expect_error([](json& j) { j["speed"] = 1e300; }, {"'speed'", "finite"});
  expect_error([](json& j) { j["speed"] = true; }, {"'speed'", "number"});
  expect_error([](json& j) { j["layers"] = json::object(); }, {"'layers'", "array"});
  expect_error([](json& j) { j["layers"][1] = {{"first", 5}, {"last", 2}}; }, {"'layers[1]'", "first 5 > last 2"});
  expect_error([](json& j) { j["layers"][0] = {{"first", 5}}; }, {"'layers[0]'"});
  expect_error([](json& j) { j["layers"][0]["last"] = "x"; }, {"'layers[0].last'"});
  expect_error([](json& j) { j = json::array(); }, {"must be a JSON object"});
}

TEST_CASE("node record text that is not JSON is a FormatError with the offset") {
  try {
    node_record_from_text("{\"node_id\": ", "etcd key /baton/nodes/w1");
    FAIL("parsed");
  } catch (const FormatError& e) {
    CHECK_THAT(e.what(), Catch::StartsWith("etcd key /baton/nodes/w1: node record is not valid JSON (at byte"));
  }
  // A number beyond double's range is nlohmann's out_of_range, not a parse_error: still a FormatError.
  CHECK_THROWS_AS(node_record_from_text(R"({"node_id": "w1", "speed": 1e999})", "etcd key /baton/nodes/w1"),
                  FormatError);
  NodeRecord bad = sample();
  bad.host = "\xff\xfe";
  CHECK_THROWS_WITH(node_record_to_text(bad), Catch::Contains("worker-1") && Catch::Contains("JSON"));
}
