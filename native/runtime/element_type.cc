#include "runtime/element_type.h"

namespace pjrt_score {

namespace {

struct TypeInfo {
  pjrt::ElementType type;
  const char* name;
  size_t size;
};

constexpr TypeInfo kTypes[] = {
    {pjrt::ElementType::kPred, "pred", 1}, {pjrt::ElementType::kS8, "s8", 1},
    {pjrt::ElementType::kS16, "s16", 2},   {pjrt::ElementType::kS32, "s32", 4},
    {pjrt::ElementType::kS64, "s64", 8},   {pjrt::ElementType::kU8, "u8", 1},
    {pjrt::ElementType::kU16, "u16", 2},   {pjrt::ElementType::kU32, "u32", 4},
    {pjrt::ElementType::kU64, "u64", 8},   {pjrt::ElementType::kF16, "f16", 2},
    {pjrt::ElementType::kF32, "f32", 4},   {pjrt::ElementType::kF64, "f64", 8},
    {pjrt::ElementType::kBF16, "bf16", 2},
};

}  // namespace

std::optional<pjrt::ElementType> ElementTypeFromName(const std::string& name) {
  for (const auto& info : kTypes) {
    if (name == info.name) return info.type;
  }
  return std::nullopt;
}

std::string ElementTypeName(pjrt::ElementType type) {
  for (const auto& info : kTypes) {
    if (info.type == type) return info.name;
  }
  return "unknown(" + std::to_string(static_cast<int>(type)) + ")";
}

size_t ElementTypeSize(pjrt::ElementType type) {
  for (const auto& info : kTypes) {
    if (info.type == type) return info.size;
  }
  return 0;
}

}  // namespace pjrt_score
