#include "binding/compile_options.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "binding/errors.h"

namespace pjrt_score {

namespace {

// Protobuf wire format: a field's tag is (number << 3) | wire type.
constexpr uint8_t kVarint = 0;
constexpr uint8_t kFixed64 = 1;
constexpr uint8_t kLengthDelimited = 2;

// CompileOptionsProto.executable_build_options (3) = {num_replicas (4): 1,
// num_partitions (5): 1}. Empty options make the plugin fail a CHECK and abort.
constexpr char kBuildOptions[] = {0x1A, 0x04, 0x20, 0x01, 0x28, 0x01};
constexpr uint32_t kEnvOptionOverrides = 7;  // map<string, OptionOverrideProto>
constexpr uint32_t kMapKey = 1;
constexpr uint32_t kMapValue = 2;
// OptionOverrideProto's oneof value.
constexpr uint32_t kStringField = 1;
constexpr uint32_t kBoolField = 2;
constexpr uint32_t kIntField = 3;
constexpr uint32_t kDoubleField = 4;

// Integers a double holds exactly (Number.isSafeInteger) go as int64.
constexpr double kMaxSafeInteger = 9007199254740991.0;

void PutVarint(std::string* out, uint64_t value) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7F) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

void PutTag(std::string* out, uint32_t field, uint8_t wire_type) {
  PutVarint(out, (static_cast<uint64_t>(field) << 3) | wire_type);
}

void PutBytes(std::string* out, uint32_t field, const std::string& bytes) {
  PutTag(out, field, kLengthDelimited);
  PutVarint(out, bytes.size());
  out->append(bytes);
}

bool IsOptionName(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

}  // namespace

CompileOptions CompileOptions::FromJs(Napi::Env env, const Napi::Value& value) {
  CompileOptions options;
  if (value.IsUndefined() || value.IsNull()) return options;
  if (!value.IsObject() || value.IsArray()) {
    ThrowTypeError(env, "XLA options must be an object { name: boolean | number | string }");
  }
  Napi::Object object = value.As<Napi::Object>();
  Napi::Array names = object.GetPropertyNames();
  for (uint32_t i = 0; i < names.Length(); ++i) {
    Napi::Value key = names.Get(i);
    if (!key.IsString()) ThrowTypeError(env, "XLA option names must be strings");
    Override option;
    option.name = key.As<Napi::String>().Utf8Value();
    if (!IsOptionName(option.name)) {
      ThrowTypeError(env, "XLA option name '" + option.name + "' must be non-empty [a-z0-9_]");
    }
    Napi::Value v = object.Get(key);
    if (v.IsBoolean()) {
      option.kind = Kind::kBool;
      option.bool_value = v.As<Napi::Boolean>().Value();
    } else if (v.IsNumber()) {
      double d = v.As<Napi::Number>().DoubleValue();
      if (!std::isfinite(d)) {
        ThrowTypeError(env, "XLA option '" + option.name + "' must be a finite number");
      }
      if (std::trunc(d) == d && std::fabs(d) <= kMaxSafeInteger) {
        option.kind = Kind::kInt;
        option.int_value = static_cast<int64_t>(d);
      } else {
        option.kind = Kind::kDouble;
        option.double_value = d;
      }
    } else if (v.IsString()) {
      option.kind = Kind::kString;
      option.string_value = v.As<Napi::String>().Utf8Value();
      if (option.string_value.find('\0') != std::string::npos) {
        ThrowTypeError(env, "XLA option '" + option.name + "' must not contain NUL");
      }
    } else {
      ThrowTypeError(env, "XLA option '" + option.name + "' must be a boolean, number or string");
    }
    options.overrides_.push_back(std::move(option));
  }
  std::sort(options.overrides_.begin(), options.overrides_.end(),
            [](const Override& a, const Override& b) { return a.name < b.name; });
  return options;
}

std::string CompileOptions::Serialize() const {
  std::string out(kBuildOptions, sizeof(kBuildOptions));
  for (const Override& option : overrides_) {
    std::string value;
    switch (option.kind) {
      case Kind::kBool:
        PutTag(&value, kBoolField, kVarint);
        PutVarint(&value, option.bool_value ? 1 : 0);
        break;
      case Kind::kInt:
        PutTag(&value, kIntField, kVarint);
        PutVarint(&value, static_cast<uint64_t>(option.int_value));  // negative: 10 bytes
        break;
      case Kind::kDouble: {
        PutTag(&value, kDoubleField, kFixed64);
        uint64_t bits;
        std::memcpy(&bits, &option.double_value, sizeof(bits));
        for (int i = 0; i < 8; ++i) value.push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
        break;
      }
      case Kind::kString:
        PutBytes(&value, kStringField, option.string_value);
        break;
    }
    std::string entry;
    PutBytes(&entry, kMapKey, option.name);
    PutBytes(&entry, kMapValue, value);
    PutBytes(&out, kEnvOptionOverrides, entry);
  }
  return out;
}

}  // namespace pjrt_score
