// GBNF (llama.cpp's grammar syntax) -> Grammar. Supported:
//   name ::= alternatives          rules (names: letters, digits, '-'); the start rule is "root"
//   a b | c d                      sequences and alternatives; ( ... ) groups
//   "text"  [a-z0-9_]  [^"\\]  .   literals, character classes (ranges, negation), any character
//   x*  x+  x?  x{m}  x{m,}  x{m,n} repetitions of the element before them
//   \n \r \t \\ \" \[ \] \- \xHH \uHHHH \UHHHHHHHH   escapes in literals and classes
//   # comment                      to the end of the line
// A rule ends at the end of its line, except inside parentheses and when the next line starts
// with '|'. Errors (GrammarError) name the line and column: undefined rules, a missing root,
// left recursion (which the matcher could not run), bad escapes, unclosed groups or strings.
#pragma once

#include <string_view>

#include "engine/grammar/grammar.h"

namespace baton::grammar {

// Throws GrammarError; `root` names the start rule.
Grammar parse_gbnf(std::string_view text, std::string_view root = "root");

}  // namespace baton::grammar
