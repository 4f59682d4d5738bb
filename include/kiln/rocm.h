// ROCm: link AMDGPU code objects with ld.lld, find the device-library bitcode, and learn the GPU's
// architecture, as tvm.support.rocm.
//
//   std::string code_object = kiln::rocm::callback_rocm_link(object_bytes);
//   std::vector<std::filesystem::path> bitcode = kiln::rocm::callback_rocm_bitcode_path();
//   kiln::rocm::RocmArch arch = kiln::rocm::get_rocm_arch();   // {"gfx900", "no rocminfo: ..."}
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/recipe.h"

namespace kiln::rocm {

struct FindLldOptions {
  // Throw when nothing is found (the message lists every candidate).
  bool required = true;
  // Prefer ld.lld-<M>.0 and ld.lld-<M> (the LLVM that made the objects); std::nullopt: none.
  std::optional<int> llvm_major{};
};

// Every ld.lld found: ld.lld-<M>.0, ld.lld-<M>, ld.lld on PATH, then the same names under
// /opt/rocm/llvm/bin/.
std::vector<std::string> find_lld(const FindLldOptions& options = {});

// `ld.lld --no-undefined -shared in -o out` (the first find_lld() when `lld` is empty): an AMDGPU
// relocatable object to a code object. An undefined symbol fails here, with the linker's message,
// rather than later inside hipModuleLoad. Throws ToolFailed("Linking error using ld.lld:").
void rocm_link(const std::filesystem::path& in, const std::filesystem::path& out,
               const std::string& lld = {});

// rocm_link's recipe (kiln/recipe.h); rocm_link(...) is perform(link_recipe(...)).
Recipe link_recipe(const std::filesystem::path& in, const std::filesystem::path& out,
                   const std::string& lld = {});

// clang and ld.lld for the amdgcn target; "" for one that is not found.
struct AmdgcnTools {
  std::string clang;
  std::string lld;
};
// `clang` when given, with the first find_lld(); otherwise clang-<M> and ld.lld-<M> of the newest
// LLVM (19 down to 15) that has both, because the device libraries are bitcode of one LLVM and
// an older clang cannot read them; else the first of clang::find_clang() and of find_lld().
AmdgcnTools find_amdgcn_tools(const std::string& clang = {});

// The languages a code object is compiled from.
enum class SourceLanguage { opencl, llvm_ir, assembly };

struct CodeObjectOptions {
  SourceLanguage language = SourceLanguage::opencl;
  // "gfx90a", ...; empty: get_rocm_arch().
  std::string arch{};
  // After the source.
  std::vector<std::string> options{};
  // Empty: find_amdgcn_tools().
  std::string clang{};
  std::string lld{};
  // Linked into the object with -mlink-builtin-bitcode (e.g. callback_rocm_bitcode_path()).
  std::vector<std::filesystem::path> device_libraries{};
  // The relocatable object between the two steps; empty: `output` with the extension .o.
  std::filesystem::path object{};
};

// An AMDGPU code object from one source: `clang -target amdgcn-amd-amdhsa -mcpu=ARCH -nogpulib
// -O2 [-x cl -cl-std=CL2.0 -Xclang -finclude-default-header | -x assembler] [-Xclang
// -mlink-builtin-bitcode -Xclang LIB]... -c source -o object options...` ("Compilation error:"),
// then link_recipe(object, output). The device libraries' file identities are key material.
// A clang or ld.lld that is not found is named "clang" / "ld.lld" (running it then fails).
Recipe code_object_recipe(const std::filesystem::path& source, const std::filesystem::path& output,
                          const CodeObjectOptions& options = {});

// The seed's tvm_callback_rocm_link: object bytes in, code object bytes out.
std::string callback_rocm_link(std::string_view object_bytes, const std::string& lld = {});

// The device libraries to link, in the seed's order: its 16 names, each N.bc or N.amdgcn.bc, in
// `dir`, else <rocm>/amdgcn/bitcode/, else /opt/rocm/lib/, else Debian's
// /usr/lib/<multiarch>/amdgcn/bitcode/. A missing library other than an isa_version or irif is a
// FileNotFound naming it and the directory.
std::vector<std::filesystem::path> callback_rocm_bitcode_path(
    const std::filesystem::path& dir = {});

// The GPU architecture, and why it is the default when it is.
struct RocmArch {
  std::string arch;    // "gfx90a", or "gfx900" by default
  std::string reason;  // empty when read from rocminfo; else why the default was used
};
// Runs <rocm>/bin/rocminfo (rocm_path empty: find_rocm_path(), else /opt/rocm).
RocmArch get_rocm_arch(const std::filesystem::path& rocm_path = {});
// The first `Name: gfx...` in rocminfo's output (CPU agents are skipped by the pattern).
std::optional<std::string> parse_rocminfo(std::string_view output);

// $ROCM_PATH; else two levels above the real path of hipcc on PATH; else /opt/rocm if it holds
// bin/hipcc (as the seed); else FileNotFound.
std::filesystem::path find_rocm_path();

// Matrix cores: compute version ("9.0", "9.0.a") major >= 8. InvalidArgument when unparsable.
bool have_matrixcore(std::string_view compute_version);

}  // namespace kiln::rocm
