#include "kiln/elf_dynamic.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kiln/error.h"
#include "kiln/paths.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<unsigned char>;

bool contains(const std::vector<std::string>& list, std::string_view item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

const ElfSymbol* find_symbol(const std::vector<ElfSymbol>& symbols, std::string_view name,
                             std::optional<std::string_view> version = std::nullopt) {
  for (const ElfSymbol& symbol : symbols) {
    if (symbol.name == name && (!version || symbol.version == *version)) return &symbol;
  }
  return nullptr;
}

const ElfVersionNeed* find_need(const ElfDynamicInfo& info, std::string_view file) {
  for (const ElfVersionNeed& need : info.version_needs) {
    if (need.file == file) return &need;
  }
  return nullptr;
}

Bytes bytes_of(const fs::path& path) {
  std::string text = testing::read_file(path);
  return {text.begin(), text.end()};
}

// The message of the InvalidArgument that parsing `bytes` throws; "no error" when it parses, and
// a failed expectation when it throws something else.
std::string parse_error(const Bytes& bytes, std::string_view origin = "edited.so") {
  try {
    parse_elf_dynamic(bytes, origin);
  } catch (const InvalidArgument& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not an InvalidArgument: " << e.what();
    return e.what();
  }
  return "no error";
}

// Field access for the tests' byte surgery on host (x86-64, little-endian) files.
template <typename T>
T read_at(const Bytes& bytes, std::uint64_t offset) {
  T value{};
  if (offset + sizeof(T) > bytes.size()) throw std::out_of_range("read_at past the end");
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

template <typename T>
void write_at(Bytes& bytes, std::uint64_t offset, T value) {
  if (offset + sizeof(T) > bytes.size()) throw std::out_of_range("write_at past the end");
  std::memcpy(bytes.data() + offset, &value, sizeof(T));
}

Elf64_Ehdr header_of(const Bytes& bytes) { return read_at<Elf64_Ehdr>(bytes, 0); }

std::uint64_t section_header_offset(const Bytes& bytes, std::uint64_t index) {
  return header_of(bytes).e_shoff + index * sizeof(Elf64_Shdr);
}

// The index of the (only) section of `type`; throws when there is none.
std::uint64_t section_index(const Bytes& bytes, std::uint32_t type) {
  for (std::uint64_t i = 0; i < header_of(bytes).e_shnum; ++i) {
    if (read_at<Elf64_Shdr>(bytes, section_header_offset(bytes, i)).sh_type == type) return i;
  }
  throw std::runtime_error("no section of type " + std::to_string(type));
}

Elf64_Shdr section_of_type(const Bytes& bytes, std::uint32_t type) {
  return read_at<Elf64_Shdr>(bytes, section_header_offset(bytes, section_index(bytes, type)));
}

// The file offset of the first dynamic entry with `tag`.
std::uint64_t dynamic_entry(const Bytes& bytes, std::int64_t tag) {
  Elf64_Shdr dynamic = section_of_type(bytes, SHT_DYNAMIC);
  for (std::uint64_t at = dynamic.sh_offset; at < dynamic.sh_offset + dynamic.sh_size;
       at += sizeof(Elf64_Dyn)) {
    if (read_at<Elf64_Dyn>(bytes, at).d_tag == tag) return at;
  }
  throw std::runtime_error("no dynamic entry " + std::to_string(tag));
}

std::optional<fs::path> find_libstdcxx() {
  for (const char* dir : {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64",
                          "/usr/lib64", "/usr/lib", "/lib"}) {
    fs::path candidate = fs::path(dir) / "libstdc++.so.6";
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) return candidate;
  }
  return std::nullopt;
}

class ElfDynamic : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!which("cc") || !which("c++")) GTEST_SKIP() << "no cc/c++ in PATH to build test libraries";
  }

  // Builds `source` into tmp_/`name` with `compiler` and `flags` (a shared library unless the
  // flags say otherwise). Throws ToolFailed with the compiler's output when that fails.
  fs::path build(std::string_view name, std::string_view source,
                 const std::vector<std::string>& flags = {"-shared"},
                 const std::string& compiler = "cc") {
    bool cxx = compiler == "c++";
    fs::path source_path = tmp_ / (std::string(name) + (cxx ? ".cc" : ".c"));
    std::ofstream(source_path) << source;
    std::vector<std::string> argv = {compiler, "-fPIC", "-o", (tmp_ / name).string(),
                                     source_path.string()};
    argv.insert(argv.end(), flags.begin(), flags.end());
    check("building a test library failed:", {.argv = argv, .cwd = tmp_.path()});
    return tmp_ / name;
  }

  // A shared library that needs libm and libc, with versioned references to both.
  fs::path math_library() {
    return build("libmath.so",
                 "#include <math.h>\n#include <stdio.h>\n"
                 "double kiln_cosine(double x) { puts(\"cos\"); return cos(x); }\n",
                 {"-shared", "-Wl,--no-as-needed", "-lm"});
  }

  TempDirectory tmp_;
};

TEST_F(ElfDynamic, HeaderExample) {
  fs::path library = math_library();
  ElfDynamicInfo info = read_elf_dynamic(library);
  std::vector<std::string> printed;
  for (const std::string& lib : info.needed) printed.push_back("needs " + lib);
  EXPECT_TRUE(contains(printed, "needs libm.so.6"));
  const ElfVersionNeed* libc = find_need(info, "libc.so.6");
  ASSERT_NE(libc, nullptr);
  EXPECT_TRUE(contains(libc->versions, "GLIBC_2.2.5"));
}

TEST_F(ElfDynamic, NeededLibrariesInLinkOrder) {
  ElfDynamicInfo info = read_elf_dynamic(math_library());
  EXPECT_EQ(info.machine, EM_X86_64);
  EXPECT_TRUE(info.is_64bit);
  EXPECT_TRUE(info.little_endian);
  EXPECT_EQ(info.type, ET_DYN);
  ASSERT_EQ(info.needed.size(), 2U);
  EXPECT_EQ(info.needed[0], "libm.so.6");
  EXPECT_EQ(info.needed[1], "libc.so.6");
  EXPECT_EQ(info.soname, "");
  EXPECT_TRUE(info.rpath.empty());
  EXPECT_TRUE(info.runpath.empty());
}

TEST_F(ElfDynamic, SonameRunpathAndRpath) {
  std::string source = "int kiln_x(void) { return 1; }\n";
  ElfDynamicInfo runpath = read_elf_dynamic(
      build("libx.so", source,
            {"-shared", "-Wl,-soname,libx.so.1", "-Wl,-rpath,$ORIGIN/../lib:/opt/kiln/lib",
             "-Wl,--enable-new-dtags"}));
  EXPECT_EQ(runpath.soname, "libx.so.1");
  EXPECT_EQ(runpath.runpath, (std::vector<std::string>{"$ORIGIN/../lib", "/opt/kiln/lib"}));
  EXPECT_TRUE(runpath.rpath.empty());

  ElfDynamicInfo rpath = read_elf_dynamic(
      build("liby.so", source, {"-shared", "-Wl,-rpath,$ORIGIN", "-Wl,--disable-new-dtags"}));
  EXPECT_EQ(rpath.rpath, std::vector<std::string>{"$ORIGIN"});
  EXPECT_TRUE(rpath.runpath.empty());
}

TEST_F(ElfDynamic, UndefinedAndDefinedSymbols) {
  ElfDynamicInfo info = read_elf_dynamic(build(  //
      "libsyms.so",
      "#include <stdio.h>\n"
      "int kiln_missing_fn(int);\n"
      "__attribute__((weak)) int kiln_weak_ref(void);\n"
      "static int kiln_static_fn(int x) { return x * 2; }\n"
      "__attribute__((visibility(\"hidden\"))) int kiln_hidden_fn(int x) { return x; }\n"
      "__attribute__((weak)) int kiln_weak_def(void) { return 0; }\n"
      "int kiln_counter = 1;\n"
      "int kiln_exported_fn(int x) {\n"
      "  puts(\"hi\");\n"
      "  return kiln_missing_fn(kiln_static_fn(kiln_hidden_fn(x))) + (kiln_weak_ref ? 1 : 0);\n"
      "}\n"));
  const ElfSymbol* missing = find_symbol(info.undefined, "kiln_missing_fn");
  ASSERT_NE(missing, nullptr);
  EXPECT_EQ(missing->version, "");
  EXPECT_FALSE(missing->weak);
  const ElfSymbol* weak_ref = find_symbol(info.undefined, "kiln_weak_ref");
  ASSERT_NE(weak_ref, nullptr);
  EXPECT_TRUE(weak_ref->weak);
  const ElfSymbol* puts = find_symbol(info.undefined, "puts");
  ASSERT_NE(puts, nullptr);
  EXPECT_EQ(puts->version, "GLIBC_2.2.5");

  const ElfSymbol* exported = find_symbol(info.defined, "kiln_exported_fn");
  ASSERT_NE(exported, nullptr);
  EXPECT_EQ(exported->type, STT_FUNC);
  EXPECT_EQ(exported->version, "");
  EXPECT_FALSE(exported->weak);
  const ElfSymbol* counter = find_symbol(info.defined, "kiln_counter");
  ASSERT_NE(counter, nullptr);
  EXPECT_EQ(counter->type, STT_OBJECT);
  const ElfSymbol* weak_def = find_symbol(info.defined, "kiln_weak_def");
  ASSERT_NE(weak_def, nullptr);
  EXPECT_TRUE(weak_def->weak);
  EXPECT_EQ(find_symbol(info.defined, "kiln_static_fn"), nullptr);
  EXPECT_EQ(find_symbol(info.defined, "kiln_hidden_fn"), nullptr);
  EXPECT_EQ(find_symbol(info.defined, "kiln_missing_fn"), nullptr);
  EXPECT_EQ(find_symbol(info.undefined, "kiln_exported_fn"), nullptr);
}

TEST_F(ElfDynamic, CxxLibraryNeedsGlibcxxVersions) {
  ElfDynamicInfo info = read_elf_dynamic(
      build("libcxx.so",
            "#include <string>\n"
            "std::string kiln_greet(const std::string& name) { return \"hello \" + name + '!'; }\n",
            {"-shared"}, "c++"));
  EXPECT_TRUE(contains(info.needed, "libstdc++.so.6"));
  const ElfVersionNeed* libstdcxx = find_need(info, "libstdc++.so.6");
  ASSERT_NE(libstdcxx, nullptr);
  EXPECT_TRUE(std::any_of(libstdcxx->versions.begin(), libstdcxx->versions.end(),
                          [](const std::string& v) { return v.starts_with("GLIBCXX_3.4"); }));
  EXPECT_TRUE(std::any_of(info.undefined.begin(), info.undefined.end(), [](const ElfSymbol& s) {
    return s.name.starts_with("_ZNSt7__cxx11") && s.version.starts_with("GLIBCXX_");
  }));
  EXPECT_NE(find_symbol(info.defined,
                        "_Z10kiln_greetRKNSt7__cxx1112basic_stringIcSt11char_"
                        "traitsIcESaIcEEE"),
            nullptr);
}

TEST_F(ElfDynamic, SystemLibstdcxxDefinesItsVersions) {
  std::optional<fs::path> libstdcxx = find_libstdcxx();
  if (!libstdcxx) GTEST_SKIP() << "no libstdc++.so.6 in the usual library directories";
  ElfDynamicInfo info = read_elf_dynamic(*libstdcxx);
  EXPECT_EQ(info.soname, "libstdc++.so.6");
  EXPECT_TRUE(contains(info.version_definitions, "GLIBCXX_3.4"));
  EXPECT_TRUE(contains(info.version_definitions, "CXXABI_1.3"));
  EXPECT_FALSE(contains(info.version_definitions, "libstdc++.so.6"));  // the VER_FLG_BASE entry
  const ElfSymbol* cout = find_symbol(info.defined, "_ZSt4cout");
  ASSERT_NE(cout, nullptr);
  EXPECT_EQ(cout->version, "GLIBCXX_3.4");
  EXPECT_FALSE(cout->hidden_version);
  EXPECT_EQ(cout->type, STT_OBJECT);
  // Compatibility definitions ("name@GLIBCXX_3.4", not "@@") carry the hidden bit.
  EXPECT_TRUE(std::any_of(info.defined.begin(), info.defined.end(),
                          [](const ElfSymbol& s) { return s.hidden_version; }));
  EXPECT_NE(find_need(info, "libc.so.6"), nullptr);
}

TEST_F(ElfDynamic, VersionScriptDefinitionsAndHiddenVersions) {
  std::ofstream(tmp_ / "versions.map") << "KILN_1 { global: kiln_new; local: *; };\n"
                                          "KILN_2 { global: kiln_new; } KILN_1;\n";
  ElfDynamicInfo info = read_elf_dynamic(
      build("libversioned.so",
            "int kiln_old(void) { return 1; }\n"
            "int kiln_current(void) { return 2; }\n"
            "__asm__(\".symver kiln_old, kiln_new@KILN_1\");\n"
            "__asm__(\".symver kiln_current, kiln_new@@KILN_2\");\n",
            {"-shared", "-Wl,-soname,libversioned.so.1", "-Wl,--version-script=versions.map"}));
  EXPECT_EQ(info.version_definitions, (std::vector<std::string>{"KILN_1", "KILN_2"}));
  const ElfSymbol* old_one = find_symbol(info.defined, "kiln_new", "KILN_1");
  ASSERT_NE(old_one, nullptr);
  EXPECT_TRUE(old_one->hidden_version);
  const ElfSymbol* current = find_symbol(info.defined, "kiln_new", "KILN_2");
  ASSERT_NE(current, nullptr);
  EXPECT_FALSE(current->hidden_version);
  EXPECT_EQ(find_symbol(info.defined, "kiln_old"), nullptr);  // local: *
}

TEST_F(ElfDynamic, BindNow) {
  std::string source = "int kiln_now(void) { return 0; }\n";
  EXPECT_TRUE(read_elf_dynamic(build("libnow.so", source, {"-shared", "-Wl,-z,now"})).bind_now);
  EXPECT_FALSE(read_elf_dynamic(build("liblazy.so", source, {"-shared", "-Wl,-z,lazy"})).bind_now);
}

TEST_F(ElfDynamic, ObjectFileHasNoDynamicInformation) {
  ElfDynamicInfo info =
      read_elf_dynamic(build("plain.o", "int kiln_plain(void) { return 0; }\n", {"-c"}));
  EXPECT_EQ(info.type, ET_REL);
  EXPECT_TRUE(info.needed.empty());
  EXPECT_TRUE(info.undefined.empty());
  EXPECT_TRUE(info.defined.empty());
  EXPECT_TRUE(info.version_needs.empty());
}

// Other classes and byte orders: clang with lld links freestanding shared libraries for targets
// whose C library this machine lacks.
TEST_F(ElfDynamic, ThirtyTwoBitAndBigEndianLibraries) {
  if (!which("clang") || !which("ld.lld")) GTEST_SKIP() << "clang and ld.lld are needed";
  std::ofstream(tmp_ / "dep.map") << "DEP_1.0 { global: dep_fn; local: *; };\n";
  struct Target {
    std::string triple;
    ElfMachine machine;
    bool is_64bit;
    bool little_endian;
  };
  for (const Target& target : {Target{"aarch64_be-linux-gnu", EM_AARCH64, true, false},
                               Target{"i686-linux-gnu", EM_386, false, true},
                               Target{"powerpc-linux-gnu", EM_PPC, false, false}}) {
    SCOPED_TRACE(target.triple);
    std::vector<std::string> flags = {"--target=" + target.triple, "-fuse-ld=lld", "-nostdlib",
                                      "-shared"};
    fs::path dir = tmp_ / target.triple;
    fs::create_directory(dir);
    std::vector<std::string> dep_flags = flags;
    dep_flags.insert(dep_flags.end(), {"-Wl,--version-script=dep.map", "-Wl,-soname,libdep.so"});
    RunResult probe =
        run({.argv = {"clang", "--target=" + target.triple, "-fuse-ld=lld", "-nostdlib", "-shared",
                      "-x", "c", "-", "-o", (dir / "probe.so").string()},
             .stdin_data = "int probe;\n"});
    if (!probe.ok()) {
      std::cout << "[  SKIPPED ] " << target.triple << ": cannot link: " << probe.output << '\n';
      continue;
    }
    build(target.triple + "/libdep.so", "int dep_fn(int x) { return x + 1; }\n", dep_flags,
          "clang");
    std::vector<std::string> use_flags = flags;
    use_flags.insert(use_flags.end(),
                     {"-L" + dir.string(), "-ldep", "-Wl,-z,now", "-Wl,-rpath,/opt/kiln"});
    ElfDynamicInfo use =
        read_elf_dynamic(build(target.triple + "/libuse.so",
                               "int dep_fn(int);\nint kiln_missing_fn(int);\n"
                               "int use_fn(int x) { return dep_fn(x) + kiln_missing_fn(x); }\n",
                               use_flags, "clang"));
    EXPECT_EQ(use.machine, target.machine);
    EXPECT_EQ(use.is_64bit, target.is_64bit);
    EXPECT_EQ(use.little_endian, target.little_endian);
    EXPECT_EQ(use.needed, std::vector<std::string>{"libdep.so"});
    EXPECT_EQ(use.runpath, std::vector<std::string>{"/opt/kiln"});
    EXPECT_TRUE(use.bind_now);
    ASSERT_EQ(use.version_needs.size(), 1U);
    EXPECT_EQ(use.version_needs[0].versions, std::vector<std::string>{"DEP_1.0"});
    EXPECT_NE(find_symbol(use.undefined, "dep_fn", "DEP_1.0"), nullptr);
    EXPECT_NE(find_symbol(use.undefined, "kiln_missing_fn", ""), nullptr);
    EXPECT_NE(find_symbol(use.defined, "use_fn"), nullptr);

    ElfDynamicInfo dep = read_elf_dynamic(dir / "libdep.so");
    EXPECT_EQ(dep.soname, "libdep.so");
    EXPECT_EQ(dep.version_definitions, std::vector<std::string>{"DEP_1.0"});
    EXPECT_NE(find_symbol(dep.defined, "dep_fn", "DEP_1.0"), nullptr);
  }
}

TEST_F(ElfDynamic, BigEndianObjectFile) {
  if (!which("clang")) GTEST_SKIP() << "clang is needed";
  ElfDynamicInfo info = read_elf_dynamic(build("be.o", "int kiln_be(void) { return 1; }\n",
                                               {"--target=aarch64_be-linux-gnu", "-c"}, "clang"));
  EXPECT_EQ(info.machine, EM_AARCH64);
  EXPECT_FALSE(info.little_endian);
  EXPECT_EQ(info.type, ET_REL);
  EXPECT_TRUE(info.needed.empty());
}

TEST_F(ElfDynamic, NotElfMissingAndNotAFile) {
  std::ofstream(tmp_ / "script.sh") << "#!/bin/sh\necho not elf\n";
  std::ofstream empty(tmp_ / "empty");
  std::string error = testing::error_of([&] { read_elf_dynamic(tmp_ / "script.sh"); });
  EXPECT_NE(error.find("script.sh' is not an ELF file"), std::string::npos) << error;
  EXPECT_THROW(read_elf_dynamic(tmp_ / "script.sh"), InvalidArgument);
  EXPECT_THROW(read_elf_dynamic(tmp_ / "empty"), InvalidArgument);
  EXPECT_THROW(read_elf_dynamic(tmp_.path()), InvalidArgument);
  EXPECT_THROW(read_elf_dynamic(tmp_ / "missing.so"), FileNotFound);
  EXPECT_NE(testing::error_of([&] { read_elf_dynamic(tmp_ / "missing.so"); }).find("missing.so"),
            std::string::npos);
}

TEST_F(ElfDynamic, TruncatedFiles) {
  Bytes whole = bytes_of(math_library());
  EXPECT_EQ(parse_error(whole), "no error");
  for (std::size_t size : {std::size_t{2}, std::size_t{10}, std::size_t{40}, std::size_t{63},
                           whole.size() / 2, whole.size() - 1}) {
    Bytes cut(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(size));
    std::string error = parse_error(cut, "cut.so");
    EXPECT_TRUE(error.starts_with("'cut.so'")) << size << ": " << error;
  }
  EXPECT_NE(parse_error(Bytes(whole.begin(), whole.begin() + 40)).find("ELF header is cut short"),
            std::string::npos);
}

TEST_F(ElfDynamic, SectionHeaderTablePastTheEnd) {
  Bytes bytes = bytes_of(math_library());
  write_at<Elf64_Off>(bytes, offsetof(Elf64_Ehdr, e_shoff), bytes.size() + 100);
  std::string error = parse_error(bytes);
  EXPECT_NE(error.find("'edited.so': malformed ELF file: the section header table"),
            std::string::npos)
      << error;
  write_at<Elf64_Off>(bytes, offsetof(Elf64_Ehdr, e_shoff), bytes.size() - 64);
  EXPECT_NE(parse_error(bytes).find("extends past the end of the file"), std::string::npos);
}

TEST_F(ElfDynamic, StringIndexOutOfRange) {
  Bytes bytes = bytes_of(math_library());
  write_at<Elf64_Xword>(bytes, dynamic_entry(bytes, DT_NEEDED) + offsetof(Elf64_Dyn, d_un),
                        0xffffff);
  std::string error = parse_error(bytes);
  EXPECT_NE(error.find("'edited.so'"), std::string::npos) << error;
  EXPECT_NE(error.find("string index 16777215 is outside the string table"), std::string::npos)
      << error;
}

TEST_F(ElfDynamic, StringWithoutTerminator) {
  Bytes bytes = bytes_of(math_library());
  Elf64_Shdr dynsym = section_of_type(bytes, SHT_DYNSYM);
  Elf64_Shdr strings = read_at<Elf64_Shdr>(bytes, section_header_offset(bytes, dynsym.sh_link));
  bytes[strings.sh_offset + strings.sh_size - 1] = 'x';  // the last name runs off the table
  EXPECT_NE(parse_error(bytes).find("does not end inside it"), std::string::npos);
}

TEST_F(ElfDynamic, CyclicVersionNeedChain) {
  Bytes bytes = bytes_of(math_library());
  Elf64_Shdr verneed = section_of_type(bytes, SHT_GNU_verneed);
  ASSERT_GE(verneed.sh_info, 2U) << "needs versions from libm and libc";
  // The first entry's vn_next pointing back at itself: a walk that trusted the count would read
  // the same entry sh_info times, one that trusted the chain would never stop.
  write_at<Elf64_Word>(bytes, verneed.sh_offset + offsetof(Elf64_Verneed, vn_next), 0);
  std::string error = parse_error(bytes);
  EXPECT_NE(error.find("'edited.so'"), std::string::npos) << error;
  EXPECT_NE(error.find("vn_next 0, which leads back into itself"), std::string::npos) << error;

  // So does a count larger than the chain.
  Bytes longer = bytes_of(math_library());
  write_at<Elf64_Word>(longer,
                       section_header_offset(longer, section_index(longer, SHT_GNU_verneed)) +
                           offsetof(Elf64_Shdr, sh_info),
                       0xffffffff);
  EXPECT_NE(parse_error(longer).find("which leads back into itself"), std::string::npos);
}

TEST_F(ElfDynamic, CyclicVersionDefinitionChain) {
  std::ofstream(tmp_ / "v.map") << "V_1 { global: kiln_v; local: *; };\n";
  Bytes bytes = bytes_of(build("libv.so", "int kiln_v(void) { return 0; }\n",
                               {"-shared", "-Wl,--version-script=v.map"}));
  Elf64_Shdr verdef = section_of_type(bytes, SHT_GNU_verdef);
  write_at<Elf64_Word>(bytes, verdef.sh_offset + offsetof(Elf64_Verdef, vd_next), 0);
  EXPECT_NE(parse_error(bytes).find("vd_next 0, which leads back into itself"), std::string::npos);
}

TEST_F(ElfDynamic, BrokenLinksAndIndexes) {
  Bytes original = bytes_of(math_library());
  std::uint64_t dynsym = section_index(original, SHT_DYNSYM);

  Bytes bad_link = original;
  write_at<Elf64_Word>(
      bad_link, section_header_offset(bad_link, dynsym) + offsetof(Elf64_Shdr, sh_link), 999);
  EXPECT_NE(parse_error(bad_link).find("links to section [999], which does not exist"),
            std::string::npos);

  Bytes bad_version = original;
  Elf64_Shdr versym = section_of_type(bad_version, SHT_GNU_versym);
  for (std::uint64_t i = 1; i < versym.sh_size / 2; ++i) {
    write_at<Elf64_Half>(bad_version, versym.sh_offset + 2 * i, 0x7ff0);
  }
  EXPECT_NE(parse_error(bad_version).find("version index 32752, which no version"),
            std::string::npos);

  Bytes bad_size = original;
  write_at<Elf64_Xword>(bad_size,
                        section_header_offset(bad_size, dynsym) + offsetof(Elf64_Shdr, sh_size),
                        0x7fffffffffffffff);
  EXPECT_NE(parse_error(bad_size).find("extends past the end of the file"), std::string::npos);
}

TEST_F(ElfDynamic, StrippedSectionHeadersAreReportedNotReadAsEmpty) {
  Bytes bytes = bytes_of(math_library());
  write_at<Elf64_Off>(bytes, offsetof(Elf64_Ehdr, e_shoff), 0);
  write_at<Elf64_Half>(bytes, offsetof(Elf64_Ehdr, e_shnum), 0);
  EXPECT_NE(parse_error(bytes).find("dynamic segment but no SHT_DYNAMIC section"),
            std::string::npos);
}

// Many symbols can name one long string; the result may not grow without bound from that.
TEST_F(ElfDynamic, SharedNamesCannotAskForUnboundedMemory) {
  std::string source = "int kiln_" + std::string(100000, 'n') + "(void) { return 0; }\n";
  for (int i = 0; i < 400; ++i)
    source += "int kiln_f" + std::to_string(i) + "(void) { return 0; }\n";
  Bytes bytes = bytes_of(build("libmany.so", source));
  ASSERT_EQ(parse_error(bytes), "no error");
  Elf64_Shdr dynsym = section_of_type(bytes, SHT_DYNSYM);
  Elf64_Shdr strings = read_at<Elf64_Shdr>(bytes, section_header_offset(bytes, dynsym.sh_link));
  std::string_view table(reinterpret_cast<const char*>(bytes.data() + strings.sh_offset),
                         strings.sh_size);
  std::size_t long_name = table.find("kiln_nnnn");
  ASSERT_NE(long_name, std::string_view::npos);
  for (std::uint64_t at = dynsym.sh_offset + sizeof(Elf64_Sym);
       at < dynsym.sh_offset + dynsym.sh_size; at += sizeof(Elf64_Sym)) {
    write_at<Elf64_Word>(bytes, at + offsetof(Elf64_Sym, st_name),
                         static_cast<Elf64_Word>(long_name));
  }
  EXPECT_NE(parse_error(bytes).find("its names add up to more than"), std::string::npos);
}

}  // namespace
}  // namespace kiln
