// How many threads a pool gets when the user names none. Its own file, apart from LocalModel, so
// engine-worker (which calls it) does not link the tokenizer and ICU through local_model.cpp.
#pragma once

namespace baton {

// std::thread::hardware_concurrency(), or 1 when it is unknown.
int default_thread_count();

}  // namespace baton
