#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "engine/base/checked_math.h"
#include "engine/base/fp16.h"
#include "engine/base/ggml_type.h"
#include "fixtures.h"

using namespace baton;
using baton::test::shared_path;

TEST_CASE("fp16 round trip is exact for every half value that is not NaN") {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = fp16_to_fp32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    REQUIRE(fp32_to_fp16(f) == h);
  }
}

TEST_CASE("fp32 to fp16 rounds to nearest even") {
  CHECK(fp32_to_fp16(1.0f) == 0x3C00);
  CHECK(fp32_to_fp16(65504.0f) == 0x7BFF);
  CHECK(fp32_to_fp16(1e6f) == 0x7C00);                // overflow -> inf
  CHECK(fp32_to_fp16(1.0f + 1.0f / 2048) == 0x3C00);  // tie rounds to even (down)
  CHECK(fp32_to_fp16(1.0f + 3.0f / 2048) == 0x3C02);  // tie rounds to even (up)
}

TEST_CASE("bf16 conversion rounds to nearest even and keeps NaN") {
  CHECK(fp32_to_bf16(1.0f) == 0x3F80);
  CHECK(bf16_to_fp32(0x3F80) == 1.0f);
  CHECK(std::isnan(bf16_to_fp32(fp32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST_CASE("checked arithmetic reports overflow") {
  CHECK_FALSE(checked_mul(1ull << 40, 1ull << 30).has_value());
  CHECK_FALSE(checked_add(~0ull, 1).has_value());
  CHECK(checked_align_up(33, 32).value() == 64);
  CHECK_FALSE(checked_align_up(~0ull - 3, 32).has_value());
}

TEST_CASE("the ggml type table knows every common type and refuses removed ids") {
  CHECK(find_ggml_type(12)->name == "q4_K");
  CHECK(find_ggml_type(12)->block_bytes == 144);
  CHECK(find_ggml_type(14)->block_bytes == 210);
  CHECK(find_ggml_type(30)->name == "bf16");
  CHECK_FALSE(find_ggml_type(4).has_value());
  CHECK_FALSE(find_ggml_type(1000).has_value());
  CHECK(parse_ggml_type("Q4_K") == GgmlType::kQ4_K);
}

TEST_CASE("the fixture directory exists") { CHECK_NOTHROW(shared_path("models/stories260K.gguf")); }
