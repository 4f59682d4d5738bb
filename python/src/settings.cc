// kiln's settings table (kiln/settings.h) for the Python package: python/kiln/_settings.py reads
// every KILN_* variable through these, so Python and C++ share one table and one flag rule.
#include <pybind11/stl.h>

#include "bindings.h"
#include "kiln/settings.h"

namespace kiln::python {

namespace py = pybind11;

namespace {

py::dict row(const settings::Setting& setting) {
  settings::Value value = settings::value(setting.name);
  py::dict d;
  d["name"] = std::string(setting.name);
  d["type"] = std::string(settings::type_name(setting.type));
  d["default"] = std::string(setting.default_value);
  d["default_text"] = std::string(setting.default_text);
  d["reader"] = std::string(setting.reader);
  d["meaning"] = std::string(setting.meaning);
  d["environment_only"] = setting.environment_only;
  d["text"] = value.text ? py::cast(*value.text) : py::none();
  d["origin"] = std::string(settings::origin_name(value.origin));
  d["where"] = value.where;
  return d;
}

}  // namespace

void bind_settings(py::module_& m) {
  m.def(
      "setting_flag", [](const std::string& name) { return settings::flag(name); },
      py::arg("name"));
  m.def(
      "setting_text", [](const std::string& name) { return settings::text(name); },
      py::arg("name"));
  m.def(
      "setting_seconds",
      [](const std::string& name) -> std::optional<double> {
        auto limit = settings::seconds(name);
        if (!limit) return std::nullopt;
        return std::chrono::duration<double>(*limit).count();
      },
      py::arg("name"));
  m.def(
      "setting", [](const std::string& name) { return row(settings::find(name)); },
      py::arg("name"));
  m.def("settings", [] {
    py::list rows;
    for (const settings::Setting& setting : settings::table()) rows.append(row(setting));
    return rows;
  });
}

}  // namespace kiln::python
