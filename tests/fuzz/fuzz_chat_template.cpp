// libFuzzer target: the chat template renderer (engine/chat). The input is both a template
// text to recognise (ChatTemplate::detect, which scans a model's Jinja template for
// distinctive substrings) and a conversation: the first byte picks a family, then messages
// separated by NUL bytes, each a role byte (system/user/assistant/other) and its content.
// baton::Error (a role the family cannot format) is the expected refusal; any other
// exception, a crash or a sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/base/error.h"
#include "engine/chat/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using baton::ChatTemplate;
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  (void)ChatTemplate::detect(all);
  if (size == 0) return 0;
  static const auto names = ChatTemplate::known_names();
  const ChatTemplate tmpl = ChatTemplate::from_name(names[data[0] % names.size()]);
  std::vector<baton::ChatMessage> messages;
  static const char* const kRoles[] = {"system", "user", "assistant", "tool"};
  size_t start = 1;
  while (start < size) {
    size_t end = all.find('\0', start);
    if (end == std::string_view::npos) end = size;
    const uint8_t role = static_cast<uint8_t>(all[start]);
    messages.push_back({kRoles[role % 4], std::string(all.substr(start + 1, end > start ? end - start - 1 : 0))});
    start = end + 1;
  }
  try {
    (void)tmpl.apply(messages, (data[0] & 0x80) != 0);
  } catch (const baton::Error&) {
  }
  return 0;
}
