// untar()'s judgement of a member from its header alone, before anything of it is written: the
// checks behind kiln/tar.h's promise that a hostile archive cannot write outside its target.
#pragma once

#include <archive_entry.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::internal {

// Splits a member name at '/', dropping empty and "." components.
std::vector<std::string_view> path_components(std::string_view path);

// Why the member named `name` (its name as stored, undecoded) must not be extracted, or nothing
// when its name, type, mode and link target are acceptable. The reason quotes link targets as
// they are; escape it before printing.
std::optional<std::string> unsafe_member_reason(archive_entry* entry, std::string_view name);

}  // namespace kiln::internal
