// Field declarations (FieldSpec and its enums).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings/status.h"
#include "shardloader/decode/field.h"
#include "shardloader/dtype.h"

namespace shardloader::bindings {

namespace py = pybind11;

void RegisterFields(py::module_& m) {
  py::enum_<FieldKind>(m, "FieldKind")
      .value("BYTES", FieldKind::kBytes)
      .value("TEXT", FieldKind::kText)
      .value("INT", FieldKind::kInt)
      .value("NPY", FieldKind::kNpy)
      .value("IMAGE", FieldKind::kImage);
  py::enum_<ResizeMode>(m, "ResizeMode")
      .value("CENTER_CROP", ResizeMode::kCenterCrop)
      .value("STRETCH", ResizeMode::kStretch);
  py::enum_<Layout>(m, "Layout")
      .value("HWC", Layout::kHWC)
      .value("CHW", Layout::kCHW);
  py::class_<FieldSpec>(m, "FieldSpec")
      .def(py::init<>())
      .def_readwrite("name", &FieldSpec::name)
      .def_readwrite("extensions", &FieldSpec::extensions)
      .def_readwrite("kind", &FieldSpec::kind)
      .def_property(
          "dtype", [](const FieldSpec& f) { return std::string(DTypeName(f.dtype)); },
          [](FieldSpec& f, const std::string& name) {
            std::optional<DType> dtype = DTypeFromName(name);
            if (!dtype) {
              ThrowIfError(absl::InvalidArgumentError("unknown dtype '" + name + "'"));
            }
            f.dtype = *dtype;
          })
      .def_readwrite("shape", &FieldSpec::shape)
      .def_property(
          "height", [](const FieldSpec& f) { return f.image.height; },
          [](FieldSpec& f, int value) { f.image.height = value; })
      .def_property(
          "width", [](const FieldSpec& f) { return f.image.width; },
          [](FieldSpec& f, int value) { f.image.width = value; })
      .def_property(
          "resize", [](const FieldSpec& f) { return f.image.resize; },
          [](FieldSpec& f, ResizeMode value) { f.image.resize = value; })
      .def_property(
          "layout", [](const FieldSpec& f) { return f.image.layout; },
          [](FieldSpec& f, Layout value) { f.image.layout = value; })
      .def("validate", [](const FieldSpec& f) { ThrowIfError(f.Validate()); });
}

}  // namespace shardloader::bindings
