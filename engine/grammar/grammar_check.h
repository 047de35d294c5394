// Checks a built Grammar can be run by the matcher: no rule can reach itself without
// consuming a character first (left recursion would expand forever).
#pragma once

#include "engine/grammar/grammar.h"

namespace baton::grammar {

// Throws GrammarError naming a left-recursive rule.
void check_no_left_recursion(const Grammar& g);

}  // namespace baton::grammar
