// The compiled half of {fmt}, built into kiln itself in a portable build (KILN_PORTABLE,
// cmake/KilnPortable.cmake): the wheels must not need libfmt.so, and Debian ships no libfmt.a.
// format-inl.h holds the out-of-line functions (FMT_FUNC is empty when FMT_HEADER_ONLY is not
// defined, so they are defined here once); the templates format.h declares `extern template`
// are instantiated here for the character types it names.
#include <fmt/format-inl.h>

#if FMT_VERSION < 90000 || FMT_VERSION >= 100000
#error "fmt_compiled.cc is fmt 9's compiled half: a portable build (KILN_PORTABLE) needs fmt 9"
#endif

FMT_BEGIN_NAMESPACE
namespace detail {
template FMT_API auto thousands_sep_impl<char>(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto thousands_sep_impl<wchar_t>(locale_ref) -> thousands_sep_result<wchar_t>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API auto decimal_point_impl(locale_ref) -> wchar_t;
}  // namespace detail
FMT_END_NAMESPACE
