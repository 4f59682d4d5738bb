#include "kiln/elf_dynamic.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "internal/fd.h"
#include "kiln/error.h"

namespace kiln {
namespace {

// Where one field of an ELF structure lies in its record, and how wide it is.
struct Field {
  std::uint32_t offset;
  std::uint32_t width;
};

#define KILN_ELF_FIELD(type, member) \
  Field { offsetof(type, member), sizeof(type::member) }

// The record layouts that differ between ELF32 and ELF64, taken from <elf.h>'s structures. The
// version structures (Verneed, Vernaux, Verdef, Verdaux) are the same in both classes.
struct Layout {
  std::uint64_t ehdr_size, shdr_size, phdr_size, sym_size, dyn_size;
  Field e_type, e_machine, e_phoff, e_shoff, e_phentsize, e_phnum, e_shentsize, e_shnum;
  Field sh_type, sh_offset, sh_size, sh_link, sh_info, sh_entsize;
  Field p_type;
  Field st_name, st_info, st_other, st_shndx;
  Field d_tag, d_val;
};

template <typename Ehdr, typename Shdr, typename Phdr, typename Sym, typename Dyn>
constexpr Layout make_layout() {
  return {
      .ehdr_size = sizeof(Ehdr),
      .shdr_size = sizeof(Shdr),
      .phdr_size = sizeof(Phdr),
      .sym_size = sizeof(Sym),
      .dyn_size = sizeof(Dyn),
      .e_type = KILN_ELF_FIELD(Ehdr, e_type),
      .e_machine = KILN_ELF_FIELD(Ehdr, e_machine),
      .e_phoff = KILN_ELF_FIELD(Ehdr, e_phoff),
      .e_shoff = KILN_ELF_FIELD(Ehdr, e_shoff),
      .e_phentsize = KILN_ELF_FIELD(Ehdr, e_phentsize),
      .e_phnum = KILN_ELF_FIELD(Ehdr, e_phnum),
      .e_shentsize = KILN_ELF_FIELD(Ehdr, e_shentsize),
      .e_shnum = KILN_ELF_FIELD(Ehdr, e_shnum),
      .sh_type = KILN_ELF_FIELD(Shdr, sh_type),
      .sh_offset = KILN_ELF_FIELD(Shdr, sh_offset),
      .sh_size = KILN_ELF_FIELD(Shdr, sh_size),
      .sh_link = KILN_ELF_FIELD(Shdr, sh_link),
      .sh_info = KILN_ELF_FIELD(Shdr, sh_info),
      .sh_entsize = KILN_ELF_FIELD(Shdr, sh_entsize),
      .p_type = KILN_ELF_FIELD(Phdr, p_type),
      .st_name = KILN_ELF_FIELD(Sym, st_name),
      .st_info = KILN_ELF_FIELD(Sym, st_info),
      .st_other = KILN_ELF_FIELD(Sym, st_other),
      .st_shndx = KILN_ELF_FIELD(Sym, st_shndx),
      .d_tag = KILN_ELF_FIELD(Dyn, d_tag),
      .d_val = KILN_ELF_FIELD(Dyn, d_un),
  };
}

constexpr Layout kElf32 = make_layout<Elf32_Ehdr, Elf32_Shdr, Elf32_Phdr, Elf32_Sym, Elf32_Dyn>();
constexpr Layout kElf64 = make_layout<Elf64_Ehdr, Elf64_Shdr, Elf64_Phdr, Elf64_Sym, Elf64_Dyn>();

constexpr Field kVnVersion = KILN_ELF_FIELD(Elf64_Verneed, vn_version);
constexpr Field kVnCnt = KILN_ELF_FIELD(Elf64_Verneed, vn_cnt);
constexpr Field kVnFile = KILN_ELF_FIELD(Elf64_Verneed, vn_file);
constexpr Field kVnAux = KILN_ELF_FIELD(Elf64_Verneed, vn_aux);
constexpr Field kVnNext = KILN_ELF_FIELD(Elf64_Verneed, vn_next);
constexpr Field kVnaOther = KILN_ELF_FIELD(Elf64_Vernaux, vna_other);
constexpr Field kVnaName = KILN_ELF_FIELD(Elf64_Vernaux, vna_name);
constexpr Field kVnaNext = KILN_ELF_FIELD(Elf64_Vernaux, vna_next);
constexpr Field kVdVersion = KILN_ELF_FIELD(Elf64_Verdef, vd_version);
constexpr Field kVdFlags = KILN_ELF_FIELD(Elf64_Verdef, vd_flags);
constexpr Field kVdNdx = KILN_ELF_FIELD(Elf64_Verdef, vd_ndx);
constexpr Field kVdCnt = KILN_ELF_FIELD(Elf64_Verdef, vd_cnt);
constexpr Field kVdAux = KILN_ELF_FIELD(Elf64_Verdef, vd_aux);
constexpr Field kVdNext = KILN_ELF_FIELD(Elf64_Verdef, vd_next);
constexpr Field kVdaName = KILN_ELF_FIELD(Elf64_Verdaux, vda_name);

#undef KILN_ELF_FIELD

// A versym value: the version index, and the bit that marks a non-default ("foo@VER") version.
constexpr std::uint16_t kVersymIndex = 0x7fff;
constexpr std::uint16_t kVersymHidden = 0x8000;

// One section header, as far as the reader needs it.
struct Section {
  std::uint64_t index = 0;
  std::uint64_t type = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint64_t link = 0;
  std::uint64_t info = 0;
  std::uint64_t entsize = 0;
};

// The version indexes of a file (versym values) and the names they stand for.
using VersionIndex = std::map<std::uint16_t, std::string_view>;

// Reads one ELF image. Every load goes through load(), which checks it against the image; the
// structure checks before it exist to give a useful message, this one to make sure nothing is
// ever read outside the image whatever those checks missed.
class Parser {
 public:
  Parser(std::span<const unsigned char> bytes, std::string_view origin)
      : bytes_(bytes),
        origin_(origin),
        string_limit_((std::uint64_t{16} << 20) + 8 * std::uint64_t{bytes.size()}),
        string_budget_(string_limit_) {}

  ElfDynamicInfo parse();

 private:
  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) const {
    throw InvalidArgument(fmt::format("'{}': malformed ELF file: {}", origin_,
                                      fmt::format(format, std::forward<Args>(args)...)));
  }

  std::uint64_t load(std::uint64_t offset, std::uint32_t width) const;
  std::uint64_t load(std::uint64_t record, Field field) const {
    return load(record + field.offset, field.width);
  }

  void read_header();
  void read_section_headers();
  Section read_section_header(std::uint64_t index) const;
  bool has_dynamic_segment() const;

  const Section* unique_section(std::uint64_t type) const;
  void check_in_file(const Section& section) const;
  std::uint64_t entry_count(const Section& section, std::uint64_t entry_size) const;
  const Section& linked_string_table(const Section& section) const;
  std::uint64_t record_in(const Section& section, std::uint64_t offset, std::uint64_t size,
                          std::string_view what, std::uint64_t number) const;
  std::string_view string_at(const Section& table, std::uint64_t index) const;
  std::string copy(std::string_view text);
  std::vector<std::string> split_path(std::string_view text);

  void read_dynamic(const Section& dynamic);
  void read_version_definitions(const Section& verdef);
  void read_version_needs(const Section& verneed);
  void read_version_need_names(const Section& verneed, const Section& strings, std::uint64_t offset,
                               std::uint64_t count, ElfVersionNeed& need);
  void read_symbols(const Section& dynsym, const Section* versym);
  std::string symbol_version(std::uint16_t versym, bool undefined, std::string_view name);

  std::span<const unsigned char> bytes_;
  std::string_view origin_;
  // Bytes the result's strings may take (16 MiB + 8 times the file), and what is left of them. A
  // string table can make many symbols share one long name; this keeps a small crafted file
  // from asking for gigabytes. Real files need less than their own size (libstdc++: a third).
  std::uint64_t string_limit_;
  std::uint64_t string_budget_;
  const Layout* layout_ = &kElf64;
  std::vector<Section> sections_;
  VersionIndex defined_versions_;
  VersionIndex needed_versions_;
  ElfDynamicInfo info_;
};

std::uint64_t Parser::load(std::uint64_t offset, std::uint32_t width) const {
  if (offset > bytes_.size() || bytes_.size() - offset < width) {
    fail("a {}-byte field at offset {} lies past the end of the file ({} bytes)", width, offset,
         bytes_.size());
  }
  std::uint64_t value = 0;
  for (std::uint32_t i = 0; i < width; ++i) {
    std::uint32_t shift = 8 * (info_.little_endian ? i : width - 1 - i);
    value |= std::uint64_t{bytes_[offset + i]} << shift;
  }
  return value;
}

ElfDynamicInfo Parser::parse() {
  read_header();
  read_section_headers();
  const Section* dynamic = unique_section(SHT_DYNAMIC);
  const Section* dynsym = unique_section(SHT_DYNSYM);
  if (dynamic == nullptr && has_dynamic_segment()) {
    fail(
        "it has a dynamic segment but no SHT_DYNAMIC section to read it through (section "
        "headers stripped, or a file of debug information only?)");
  }
  if (dynamic != nullptr) read_dynamic(*dynamic);
  if (const Section* verdef = unique_section(SHT_GNU_verdef)) read_version_definitions(*verdef);
  if (const Section* verneed = unique_section(SHT_GNU_verneed)) read_version_needs(*verneed);
  const Section* versym = unique_section(SHT_GNU_versym);
  if (dynsym != nullptr) {
    read_symbols(*dynsym, versym);
  } else if (versym != nullptr) {
    fail("it has a symbol version section [{}] but no dynamic symbol table", versym->index);
  }
  return std::move(info_);
}

void Parser::read_header() {
  if (bytes_.size() < SELFMAG || std::memcmp(bytes_.data(), ELFMAG, SELFMAG) != 0) {
    throw InvalidArgument(fmt::format("'{}' is not an ELF file (no \\x7fELF magic)", origin_));
  }
  if (bytes_.size() < EI_NIDENT) fail("the identification is cut short at {} bytes", bytes_.size());
  unsigned char elf_class = bytes_[EI_CLASS];
  unsigned char encoding = bytes_[EI_DATA];
  if (elf_class != ELFCLASS32 && elf_class != ELFCLASS64) fail("unknown ELF class {}", elf_class);
  if (encoding != ELFDATA2LSB && encoding != ELFDATA2MSB) {
    fail("unknown data encoding {}", encoding);
  }
  info_.is_64bit = elf_class == ELFCLASS64;
  info_.little_endian = encoding == ELFDATA2LSB;
  layout_ = info_.is_64bit ? &kElf64 : &kElf32;
  if (bytes_.size() < layout_->ehdr_size) {
    fail("the ELF header is cut short at {} of {} bytes", bytes_.size(), layout_->ehdr_size);
  }
  info_.type = static_cast<std::uint16_t>(load(0, layout_->e_type));
  info_.machine = static_cast<ElfMachine>(load(0, layout_->e_machine));
}

Section Parser::read_section_header(std::uint64_t index) const {
  std::uint64_t record = load(0, layout_->e_shoff) + index * load(0, layout_->e_shentsize);
  return {.index = index,
          .type = load(record, layout_->sh_type),
          .offset = load(record, layout_->sh_offset),
          .size = load(record, layout_->sh_size),
          .link = load(record, layout_->sh_link),
          .info = load(record, layout_->sh_info),
          .entsize = load(record, layout_->sh_entsize)};
}

void Parser::read_section_headers() {
  std::uint64_t table = load(0, layout_->e_shoff);
  if (table == 0) return;  // no section headers at all
  std::uint64_t entry_size = load(0, layout_->e_shentsize);
  if (entry_size < layout_->shdr_size) {
    fail("e_shentsize is {}, smaller than a section header ({} bytes)", entry_size,
         layout_->shdr_size);
  }
  if (table > bytes_.size() || bytes_.size() - table < entry_size) {
    fail("the section header table (e_shoff {}) lies past the end of the file ({} bytes)", table,
         bytes_.size());
  }
  // More than SHN_LORESERVE sections: e_shnum is 0 and section 0's sh_size holds the count.
  std::uint64_t count = load(0, layout_->e_shnum);
  if (count == 0) count = read_section_header(0).size;
  if (count > (bytes_.size() - table) / entry_size) {
    fail(
        "the section header table ({} entries of {} bytes at offset {}) extends past the end of "
        "the file ({} bytes)",
        count, entry_size, table, bytes_.size());
  }
  sections_.reserve(count);  // bounded by the file size, checked just above
  for (std::uint64_t i = 0; i < count; ++i) sections_.push_back(read_section_header(i));
}

bool Parser::has_dynamic_segment() const {
  std::uint64_t table = load(0, layout_->e_phoff);
  std::uint64_t entry_size = load(0, layout_->e_phentsize);
  std::uint64_t count = load(0, layout_->e_phnum);
  if (table == 0 || count == 0) return false;
  if (entry_size < layout_->phdr_size) {
    fail("e_phentsize is {}, smaller than a program header ({} bytes)", entry_size,
         layout_->phdr_size);
  }
  if (table > bytes_.size() || count > (bytes_.size() - table) / entry_size) {
    fail(
        "the program header table ({} entries of {} bytes at offset {}) extends past the end of "
        "the file ({} bytes)",
        count, entry_size, table, bytes_.size());
  }
  for (std::uint64_t i = 0; i < count; ++i) {
    if (load(table + i * entry_size, layout_->p_type) == PT_DYNAMIC) return true;
  }
  return false;
}

const Section* Parser::unique_section(std::uint64_t type) const {
  const Section* found = nullptr;
  for (const Section& section : sections_) {
    if (section.type != type) continue;
    if (found != nullptr) {
      fail("sections [{}] and [{}] both have type {:#x}; there must be one at most", found->index,
           section.index, type);
    }
    found = &section;
  }
  return found;
}

void Parser::check_in_file(const Section& section) const {
  if (section.type == SHT_NOBITS) fail("section [{}] has no contents in the file", section.index);
  if (section.offset > bytes_.size() || bytes_.size() - section.offset < section.size) {
    fail("section [{}] (offset {}, {} bytes) extends past the end of the file ({} bytes)",
         section.index, section.offset, section.size, bytes_.size());
  }
}

std::uint64_t Parser::entry_count(const Section& section, std::uint64_t entry_size) const {
  check_in_file(section);
  if (section.entsize != 0 && section.entsize != entry_size) {
    fail("section [{}] has entries of {} bytes, not {}", section.index, section.entsize,
         entry_size);
  }
  if (section.size % entry_size != 0) {
    fail("section [{}] is {} bytes, not a whole number of {}-byte entries", section.index,
         section.size, entry_size);
  }
  return section.size / entry_size;
}

const Section& Parser::linked_string_table(const Section& section) const {
  if (section.link >= sections_.size()) {
    fail("section [{}] links to section [{}], which does not exist ({} sections)", section.index,
         section.link, sections_.size());
  }
  const Section& table = sections_[section.link];
  if (table.type != SHT_STRTAB) {
    fail("section [{}] links to section [{}] as its string table, but that has type {:#x}",
         section.index, table.index, table.type);
  }
  check_in_file(table);
  return table;
}

// The file offset of a `size`-byte record at `offset` within `section`, checked to lie inside it.
std::uint64_t Parser::record_in(const Section& section, std::uint64_t offset, std::uint64_t size,
                                std::string_view what, std::uint64_t number) const {
  if (offset > section.size || section.size - offset < size) {
    fail("{} {} at offset {} lies outside section [{}] ({} bytes)", what, number, offset,
         section.index, section.size);
  }
  return section.offset + offset;
}

std::string_view Parser::string_at(const Section& table, std::uint64_t index) const {
  if (index >= table.size) {
    fail("string index {} is outside the string table [{}] ({} bytes)", index, table.index,
         table.size);
  }
  const auto* start = reinterpret_cast<const char*>(bytes_.data() + table.offset + index);
  std::size_t room = table.size - index;
  const void* end = std::memchr(start, '\0', room);
  if (end == nullptr) {
    fail("the string at index {} of string table [{}] does not end inside it", index, table.index);
  }
  return {start, static_cast<std::size_t>(static_cast<const char*>(end) - start)};
}

std::string Parser::copy(std::string_view text) {
  std::uint64_t cost = text.size() + sizeof(std::string);
  if (cost > string_budget_) {
    fail(
        "its names add up to more than {} bytes (string table entries shared by too many "
        "symbols?)",
        string_limit_);
  }
  string_budget_ -= cost;
  return std::string(text);
}

// Search path entries as the loader reads them: an empty entry stays (it means the current
// directory), an empty string has none.
std::vector<std::string> Parser::split_path(std::string_view text) {
  std::vector<std::string> entries;
  if (text.empty()) return entries;
  while (true) {
    std::size_t colon = text.find(':');
    entries.push_back(copy(text.substr(0, colon)));
    if (colon == std::string_view::npos) return entries;
    text.remove_prefix(colon + 1);
  }
}

void Parser::read_dynamic(const Section& dynamic) {
  std::uint64_t count = entry_count(dynamic, layout_->dyn_size);
  const Section& strings = linked_string_table(dynamic);
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint64_t record = dynamic.offset + i * layout_->dyn_size;
    std::uint64_t tag = load(record, layout_->d_tag);
    std::uint64_t value = load(record, layout_->d_val);
    if (tag == DT_NULL) break;
    switch (tag) {
      case DT_NEEDED:
        info_.needed.push_back(copy(string_at(strings, value)));
        break;
      case DT_SONAME:
        info_.soname = copy(string_at(strings, value));
        break;
      case DT_RPATH:
        for (std::string& entry : split_path(string_at(strings, value))) {
          info_.rpath.push_back(std::move(entry));
        }
        break;
      case DT_RUNPATH:
        for (std::string& entry : split_path(string_at(strings, value))) {
          info_.runpath.push_back(std::move(entry));
        }
        break;
      case DT_BIND_NOW:
        info_.bind_now = true;
        break;
      case DT_FLAGS:
        info_.bind_now = info_.bind_now || (value & DF_BIND_NOW) != 0;
        break;
      case DT_FLAGS_1:
        info_.bind_now = info_.bind_now || (value & DF_1_NOW) != 0;
        break;
      default:
        break;
    }
  }
}

// Verdef entries form a chain through vd_next, sh_info entries long. Every step must move forward
// by at least one entry, so the walk ends within the section whatever the counts say.
void Parser::read_version_definitions(const Section& verdef) {
  check_in_file(verdef);
  const Section& strings = linked_string_table(verdef);
  std::uint64_t offset = 0;
  for (std::uint64_t i = 0; i < verdef.info; ++i) {
    std::uint64_t record = record_in(verdef, offset, sizeof(Elf64_Verdef), "verdef entry", i);
    if (load(record, kVdVersion) != VER_DEF_CURRENT) {
      fail("verdef entry {} has version {}, not {}", i, load(record, kVdVersion), VER_DEF_CURRENT);
    }
    if (load(record, kVdCnt) == 0) fail("verdef entry {} has no name (vd_cnt is 0)", i);
    std::uint64_t aux = record_in(verdef, offset + load(record, kVdAux), sizeof(Elf64_Verdaux),
                                  "verdaux of verdef entry", i);
    std::string_view name = string_at(strings, load(aux, kVdaName));
    auto index = static_cast<std::uint16_t>(load(record, kVdNdx));
    if ((load(record, kVdFlags) & VER_FLG_BASE) != 0) {
      defined_versions_[index] = "";  // the file itself: its symbols are unversioned
    } else {
      defined_versions_[index] = name;
      info_.version_definitions.push_back(copy(name));
    }
    if (i + 1 == verdef.info) break;
    std::uint64_t next = load(record, kVdNext);
    if (next < sizeof(Elf64_Verdef)) {
      fail("verdef entry {} of {} has vd_next {}, which leads back into itself", i, verdef.info,
           next);
    }
    offset += next;
  }
}

void Parser::read_version_needs(const Section& verneed) {
  check_in_file(verneed);
  const Section& strings = linked_string_table(verneed);
  std::uint64_t offset = 0;
  for (std::uint64_t i = 0; i < verneed.info; ++i) {
    std::uint64_t record = record_in(verneed, offset, sizeof(Elf64_Verneed), "verneed entry", i);
    if (load(record, kVnVersion) != VER_NEED_CURRENT) {
      fail("verneed entry {} has version {}, not {}", i, load(record, kVnVersion),
           VER_NEED_CURRENT);
    }
    ElfVersionNeed need{.file = copy(string_at(strings, load(record, kVnFile))), .versions = {}};
    read_version_need_names(verneed, strings, offset + load(record, kVnAux), load(record, kVnCnt),
                            need);
    info_.version_needs.push_back(std::move(need));
    if (i + 1 == verneed.info) break;
    std::uint64_t next = load(record, kVnNext);
    if (next < sizeof(Elf64_Verneed)) {
      fail("verneed entry {} of {} has vn_next {}, which leads back into itself", i, verneed.info,
           next);
    }
    offset += next;
  }
}

// The Vernaux chain of one Verneed entry: `count` entries from `offset` (within the section).
void Parser::read_version_need_names(const Section& verneed, const Section& strings,
                                     std::uint64_t offset, std::uint64_t count,
                                     ElfVersionNeed& need) {
  for (std::uint64_t j = 0; j < count; ++j) {
    std::uint64_t aux = record_in(verneed, offset, sizeof(Elf64_Vernaux), "vernaux entry", j);
    std::string_view name = string_at(strings, load(aux, kVnaName));
    needed_versions_[static_cast<std::uint16_t>(load(aux, kVnaOther))] = name;
    need.versions.push_back(copy(name));
    if (j + 1 == count) break;
    std::uint64_t next = load(aux, kVnaNext);
    if (next < sizeof(Elf64_Vernaux)) {
      fail("vernaux entry {} of {} for '{}' has vna_next {}, which leads back into itself", j,
           count, need.file, next);
    }
    offset += next;
  }
}

void Parser::read_symbols(const Section& dynsym, const Section* versym) {
  std::uint64_t count = entry_count(dynsym, layout_->sym_size);
  const Section& strings = linked_string_table(dynsym);
  if (versym != nullptr) {
    if (versym->link != dynsym.index) {
      fail(
          "the symbol version section [{}] links to section [{}], not to the dynamic symbol "
          "table [{}]",
          versym->index, versym->link, dynsym.index);
    }
    if (entry_count(*versym, sizeof(Elf64_Versym)) < count) {
      fail("the symbol version section [{}] has fewer entries than the {} dynamic symbols",
           versym->index, count);
    }
  }
  for (std::uint64_t i = 1; i < count; ++i) {  // entry 0 is the reserved null symbol
    std::uint64_t record = dynsym.offset + i * layout_->sym_size;
    std::string_view name = string_at(strings, load(record, layout_->st_name));
    if (name.empty()) continue;
    auto symbol_info = static_cast<unsigned char>(load(record, layout_->st_info));
    auto visibility = ELF64_ST_VISIBILITY(load(record, layout_->st_other));
    unsigned char binding = ELF64_ST_BIND(symbol_info);
    bool undefined = load(record, layout_->st_shndx) == SHN_UNDEF;
    bool exported = (binding == STB_GLOBAL || binding == STB_WEAK || binding == STB_GNU_UNIQUE) &&
                    (visibility == STV_DEFAULT || visibility == STV_PROTECTED);
    if (!undefined && !exported) continue;
    auto versym_value = versym == nullptr
                            ? std::uint16_t{0}
                            : static_cast<std::uint16_t>(load(versym->offset + 2 * i, 2));
    ElfSymbol symbol{.name = copy(name),
                     .version = symbol_version(versym_value, undefined, name),
                     .weak = binding == STB_WEAK,
                     .hidden_version = (versym_value & kVersymHidden) != 0,
                     .type = static_cast<unsigned char>(ELF64_ST_TYPE(symbol_info))};
    (undefined ? info_.undefined : info_.defined).push_back(std::move(symbol));
  }
}

// The version name a versym value stands for: needed versions for an undefined symbol, defined
// ones otherwise (the indexes of both share one space, so either is looked up if need be).
std::string Parser::symbol_version(std::uint16_t versym, bool undefined, std::string_view name) {
  std::uint16_t index = versym & kVersymIndex;
  if (index == VER_NDX_LOCAL || index == VER_NDX_GLOBAL) return {};
  const VersionIndex& first = undefined ? needed_versions_ : defined_versions_;
  const VersionIndex& second = undefined ? defined_versions_ : needed_versions_;
  auto found = first.find(index);
  if (found == first.end()) {
    found = second.find(index);
    if (found == second.end()) {
      fail("symbol '{}' has version index {}, which no version definition or need declares", name,
           index);
    }
  }
  return copy(found->second);
}

// A read-only private mapping of a whole file, unmapped when it goes away.
class Mapping {
 public:
  Mapping(void* address, std::size_t size) noexcept : address_(address), size_(size) {}
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() {
    if (address_ != nullptr) ::munmap(address_, size_);
  }
  std::span<const unsigned char> bytes() const noexcept {
    return {static_cast<const unsigned char*>(address_), size_};
  }

 private:
  void* address_;
  std::size_t size_;
};

}  // namespace

ElfDynamicInfo parse_elf_dynamic(std::span<const unsigned char> bytes, std::string_view origin) {
  return Parser(bytes, origin).parse();
}

ElfDynamicInfo read_elf_dynamic(const std::filesystem::path& path) {
  std::string name = path.string();
  int raw = internal::retry_eintr([&] { return ::open(path.c_str(), O_RDONLY | O_CLOEXEC); });
  if (raw == -1) {
    if (errno == ENOENT) throw FileNotFound(fmt::format("'{}' does not exist", name));
    throw SystemError(fmt::format("open '{}'", name), errno);
  }
  internal::UniqueFd fd(raw);
  struct stat status {};
  if (::fstat(fd.get(), &status) == -1) throw SystemError(fmt::format("stat '{}'", name), errno);
  if (!S_ISREG(status.st_mode)) throw InvalidArgument(fmt::format("'{}' is not a file", name));
  if (status.st_size == 0) return parse_elf_dynamic({}, name);  // mmap refuses 0 bytes
  auto size = static_cast<std::size_t>(status.st_size);
  void* address = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (address == MAP_FAILED) throw SystemError(fmt::format("mmap '{}'", name), errno);
  Mapping mapping(address, size);
  return parse_elf_dynamic(mapping.bytes(), name);
}

}  // namespace kiln
