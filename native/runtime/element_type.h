// Element types as JS names them ('f32', 'bf16', ...) and as PJRT does.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "runtime/pjrt_api.h"

namespace pjrt_score {

std::optional<pjrt::ElementType> ElementTypeFromName(const std::string& name);
// 'f32' etc.; "unknown(N)" for a type pjrt-score does not name.
std::string ElementTypeName(pjrt::ElementType type);
// Bytes per element in a dense host array; 0 for a type we cannot transfer.
size_t ElementTypeSize(pjrt::ElementType type);

}  // namespace pjrt_score
