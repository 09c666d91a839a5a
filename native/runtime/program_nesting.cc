#include "runtime/program_nesting.h"

namespace pjrt_score {

size_t ProgramNestingDepth(const std::string& text, size_t limit) {
  size_t depth = 0;
  size_t deepest = 0;
  const size_t n = text.size();
  for (size_t i = 0; i < n; ++i) {
    char c = text[i];
    if (c == '"') {
      for (++i; i < n && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;
      }
    } else if (c == '/' && i + 1 < n && text[i + 1] == '/') {
      while (i < n && text[i] != '\n') ++i;
    } else if (c == '(' || c == '[' || c == '{' || c == '<') {
      if (++depth > deepest) {
        deepest = depth;
        if (deepest > limit) return deepest;
      }
    } else if (c == ')' || c == ']' || c == '}' || (c == '>' && !(i > 0 && text[i - 1] == '-'))) {
      if (depth > 0) --depth;
    }
  }
  return deepest;
}

}  // namespace pjrt_score
