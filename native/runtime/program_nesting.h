// A cheap bound on how deeply program text nests, checked before the text
// reaches the plugin's recursive MLIR parser. lib/runtime/nesting.ts holds the
// same rule, so the TypeScript check and this one agree.
#pragma once

#include <cstddef>
#include <string>

namespace pjrt_score {

// The deepest bracket nesting compile() accepts. Generated programs stay
// under 20; the parse of 1,000 levels needs a few MiB of stack.
constexpr size_t kMaxProgramNesting = 1000;

// The greatest depth of (, [, { and < in `text` (outside "strings" and //
// comments; the > of -> does not close), stopping early once past `limit`.
size_t ProgramNestingDepth(const std::string& text, size_t limit);

}  // namespace pjrt_score
