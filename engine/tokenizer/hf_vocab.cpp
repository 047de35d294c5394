// Hugging Face tokenizer files -> GGUF tokenizer metadata (see hf_vocab.h).
#include "engine/tokenizer/hf_vocab.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "engine/base/error.h"
#include "engine/tokenizer/pre_tokenizer.h"
#include "engine/tokenizer/vocab.h"

namespace baton::tokenizer {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// FNV-1a 64 of merges.txt -> pre-tokenizer, for merges we know exactly.
struct KnownMerges {
  uint64_t fnv1a;
  const char* pre;
  const char* what;
};
constexpr KnownMerges kKnownMerges[] = {
    {0x891687f62ed8cbd2ULL, "qwen2", "Qwen2 / Qwen1.5 (151387 merges)"},
};

uint64_t fnv1a(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open {}", path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json read_json(const fs::path& path) {
  try {
    return json::parse(read_file(path));
  } catch (const json::exception& e) {
    fail<FormatError>("{}: invalid JSON: {}", path.string(), e.what());
  }
}

// "bos_token": "<s>" | {"content": "<s>", ...} | null
std::optional<std::string> token_content(const json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    return (*it)["content"].get<std::string>();
  return std::nullopt;
}

std::string guess_pre(const std::string& merges, const json& config, const fs::path& dir) {
  const uint64_t h = fnv1a(merges);
  for (const auto& k : kKnownMerges)
    if (k.fnv1a == h) return k.pre;
  const std::string cls = config.value("tokenizer_class", std::string());
  if (cls == "Qwen2Tokenizer" || cls == "Qwen2TokenizerFast") return "qwen2";
  fail(
      "cannot tell which pre-tokenizer {} needs (tokenizer_class '{}', merges fingerprint {:016x} "
      "unknown); pass --pre NAME, one of: {}",
      dir.string(), cls, h, fmt::join(pre_tokenizer_names(), ", "));
}

}  // namespace

gguf::Metadata metadata_from_hf_dir(const std::string& dir_name, const HfVocabOptions& options) {
  const fs::path dir(dir_name);
  const fs::path vocab_path = dir / "vocab.json";
  const fs::path merges_path = dir / "merges.txt";
  const json vocab_json = read_json(vocab_path);
  if (!vocab_json.is_object()) fail<FormatError>("{}: expected an object of token -> id", vocab_path.string());
  const std::string merges_text = read_file(merges_path);
  const json config =
      fs::exists(dir / "tokenizer_config.json") ? read_json(dir / "tokenizer_config.json") : json::object();
  const json model_config = fs::exists(dir / "config.json") ? read_json(dir / "config.json") : json::object();

  // tokens by id
  std::map<int64_t, std::pair<std::string, TokenType>> by_id;
  for (const auto& [text, id] : vocab_json.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= INT32_MAX)
      fail<FormatError>("{}: token '{}' has id {}, expected a non-negative integer", vocab_path.string(), text,
                        id.dump());
    by_id[id.get<int64_t>()] = {text, TokenType::kNormal};
  }
  if (auto it = config.find("added_tokens_decoder"); it != config.end() && it->is_object()) {
    for (const auto& [key, entry] : it->items()) {
      int64_t id = -1;
      try {
        id = std::stoll(key);
      } catch (const std::exception&) {
        fail<FormatError>("{}: added_tokens_decoder key '{}' is not a token id",
                          (dir / "tokenizer_config.json").string(), key);
      }
      if (id < 0 || id >= INT32_MAX || !entry.contains("content") || !entry["content"].is_string())
        fail<FormatError>("{}: added_tokens_decoder entry '{}' needs an id and a string content",
                          (dir / "tokenizer_config.json").string(), key);
      const bool special = entry.value("special", false);
      by_id[id] = {entry["content"].get<std::string>(), special ? TokenType::kControl : TokenType::kUserDefined};
    }
  }
  if (by_id.empty()) fail<FormatError>("{}: no tokens", vocab_path.string());
  int64_t n_tokens = by_id.rbegin()->first + 1;
  if (model_config.contains("vocab_size") && model_config["vocab_size"].is_number_integer())
    n_tokens = std::max<int64_t>(n_tokens, model_config["vocab_size"].get<int64_t>());

  std::vector<std::string> tokens(static_cast<size_t>(n_tokens));
  std::vector<int64_t> types(static_cast<size_t>(n_tokens), static_cast<int64_t>(TokenType::kUnused));
  for (int64_t i = 0; i < n_tokens; ++i) tokens[i] = fmt::format("[PAD{}]", i);
  for (const auto& [id, entry] : by_id) {
    tokens[id] = entry.first;
    types[id] = static_cast<int64_t>(entry.second);
  }

  // merges: one "left right" per line; an optional "#version" first line
  std::vector<std::string> merges;
  std::istringstream lines(merges_text);
  std::string line;
  for (size_t n = 1; std::getline(lines, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (n == 1 && line.starts_with("#version"))) continue;
    if (line.find(' ', 1) == std::string::npos)
      fail<FormatError>("{}:{}: merge '{}' has no space between its two parts", merges_path.string(), n, line);
    merges.push_back(line);
  }

  std::string pre = options.pre;
  if (pre.empty()) {
    pre = guess_pre(merges_text, config, dir);
  } else if (!find_pre_tokenizer(pre)) {
    fail("unknown pre-tokenizer '{}'; one of: {}", pre, fmt::join(pre_tokenizer_names(), ", "));
  }

  auto id_of = [&](const std::optional<std::string>& text) -> std::optional<uint32_t> {
    if (!text) return std::nullopt;
    for (const auto& [id, entry] : by_id)
      if (entry.first == *text) return static_cast<uint32_t>(id);
    return std::nullopt;
  };
  auto config_id = [&](const char* key) -> std::optional<uint32_t> {
    auto it = model_config.find(key);
    if (it != model_config.end() && it->is_number_integer() && it->get<int64_t>() >= 0 && it->get<int64_t>() < n_tokens)
      return static_cast<uint32_t>(it->get<int64_t>());
    return std::nullopt;
  };
  auto eos = id_of(token_content(config, "eos_token"));
  if (!eos) eos = config_id("eos_token_id");
  // no BOS declared: use config.json's, else the EOS text (GPT-2 style, as Qwen2 GGUFs have it)
  auto bos = id_of(token_content(config, "bos_token"));
  if (!bos) bos = config_id("bos_token_id");
  if (!bos) bos = eos;
  const auto pad = id_of(token_content(config, "pad_token"));
  const auto unk = id_of(token_content(config, "unk_token"));

  gguf::Metadata md;
  const std::string cls = config.value("tokenizer_class", std::string());
  if (cls.starts_with("Qwen2")) md.set_string("general.architecture", "qwen2");
  fs::path name = fs::absolute(dir).lexically_normal();
  if (name.filename().empty()) name = name.parent_path();  // "dir/"
  md.set_string("general.name", name.filename().string());
  md.set_string("tokenizer.ggml.model", "gpt2");
  md.set_string("tokenizer.ggml.pre", pre);
  md.set_string_array("tokenizer.ggml.tokens", std::move(tokens));
  md.set_int32_array("tokenizer.ggml.token_type", std::move(types));
  md.set_string_array("tokenizer.ggml.merges", std::move(merges));
  if (bos) md.set_uint32("tokenizer.ggml.bos_token_id", *bos);
  if (eos) md.set_uint32("tokenizer.ggml.eos_token_id", *eos);
  if (unk) md.set_uint32("tokenizer.ggml.unknown_token_id", *unk);
  if (pad) md.set_uint32("tokenizer.ggml.padding_token_id", *pad);
  if (auto it = config.find("add_bos_token"); it != config.end() && it->is_boolean())
    md.set_bool("tokenizer.ggml.add_bos_token", it->get<bool>());
  if (auto it = config.find("add_eos_token"); it != config.end() && it->is_boolean())
    md.set_bool("tokenizer.ggml.add_eos_token", it->get<bool>());
  if (auto it = config.find("chat_template"); it != config.end() && it->is_string())
    md.set_string("tokenizer.chat_template", it->get<std::string>());
  return md;
}

}  // namespace baton::tokenizer
