// Lists the extensions a PJRT plugin offers (the extension_start chain of
// its PJRT_Api) and, for the FFI extension, which entry points it has:
// whether a custom-call handler can be registered from outside the plugin.
//
//   cc -O1 -o /tmp/pjrt-extensions scripts/lab/probe/pjrt-extensions.c -ldl
//   /tmp/pjrt-extensions ~/.cache/pjrt-score/plugins/xla-cpu-pjrt-0.0.1/xla_cpu_pjrt.so
//
// Declarations are our own, from the facts in docs/pjrt.md and the public
// header's layout: every extension starts {size_t struct_size; int type;
// void* next}; the FFI extension then has type_id_register, user_data_add
// and (newer plugins) register_handler, 8 bytes each. Only reads the table:
// nothing is initialized or created.
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>

struct ExtensionBase {
  size_t struct_size;
  int type;
  struct ExtensionBase* next;
};

struct ApiHeader {
  size_t struct_size;
  struct ExtensionBase* extension_start;
  size_t version_struct_size;
  void* version_extension_start;
  int major_version;
  int minor_version;
};

struct FfiExtension {
  struct ExtensionBase base;
  void* type_id_register;
  void* user_data_add;
  void* register_handler;
};

static const char* const kNames[] = {
    "Gpu_Custom_Call", "Profiler", "Custom_Partitioner", "Stream", "Layouts", "FFI", "MemoryDescriptions", "Triton", "RawBuffer",
    "PhaseCompile", "Example", "Unknown", "CrossHostTransfers", "ExecutableMetadata", "Callback", "HostAllocator", "TpuTopology",
    "TpuExecutable",
};
static const int kFfi = 5;

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s PLUGIN.so\n", argv[0]);
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  const struct ApiHeader* (*get)(void) = (const struct ApiHeader* (*)(void))dlsym(lib, "GetPjrtApi");
  if (!get) {
    fprintf(stderr, "no GetPjrtApi in %s\n", argv[1]);
    return 1;
  }
  const struct ApiHeader* api = get();
  printf("PJRT C API %d.%d, table %zu bytes\n", api->major_version, api->minor_version, api->struct_size);
  int count = 0;
  for (const struct ExtensionBase* e = api->extension_start; e && count < 64; e = e->next, count++) {
    const char* name = e->type >= 0 && e->type < (int)(sizeof kNames / sizeof kNames[0]) ? kNames[e->type] : "(newer than this list)";
    printf("extension type %d %s, struct_size %zu\n", e->type, name, e->struct_size);
    if (e->type == kFfi) {
      const struct FfiExtension* ffi = (const struct FfiExtension*)e;
      int hasRegister = e->struct_size >= offsetof(struct FfiExtension, register_handler) + sizeof(void*);
      printf("  type_id_register %s, user_data_add %s, register_handler %s\n", ffi->type_id_register ? "set" : "null",
             ffi->user_data_add ? "set" : "null",
             hasRegister ? (ffi->register_handler ? "set" : "null") : "absent (struct too small)");
    }
  }
  printf("%d extension(s)\n", count);
  return 0;
}
