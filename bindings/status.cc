#include "bindings/status.h"

#include <string>

#include "absl/status/status.h"
#include "shardloader/status.h"

namespace shardloader::bindings {

namespace py = pybind11;

void ThrowIfError(const absl::Status& status) {
  if (status.ok()) return;
  // shardloader.errors owns the class for each code (ERROR_CLASSES).
  py::module_ errors = py::module_::import("shardloader.errors");
  py::object error_class = errors.attr("error_class_for_code")(static_cast<int>(status.code()));
  const ErrorContext context = GetContext(status);
  py::object uri = py::none();
  py::object offset = py::none();
  py::object key = py::none();
  if (!context.uri.empty()) uri = py::str(context.uri);
  if (context.offset.has_value()) offset = py::int_(*context.offset);
  if (!context.key.empty()) key = py::str(context.key);
  py::object error = error_class(std::string(status.message()), py::arg("uri") = uri,
                                 py::arg("offset") = offset, py::arg("key") = key);
  PyErr_SetObject(error_class.ptr(), error.ptr());
  throw py::error_already_set();
}

}  // namespace shardloader::bindings
