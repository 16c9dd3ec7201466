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
      .value("STRETCH", ResizeMode::kStretch)
      .value("RANDOM_RESIZED_CROP", ResizeMode::kRandomResizedCrop);
  py::enum_<Layout>(m, "Layout").value("HWC", Layout::kHWC).value("CHW", Layout::kCHW);
  py::class_<ImageOptions>(m, "ImageOptions")
      .def(py::init<>())
      .def_readwrite("height", &ImageOptions::height)
      .def_readwrite("width", &ImageOptions::width)
      .def_readwrite("resize", &ImageOptions::resize)
      .def_readwrite("layout", &ImageOptions::layout)
      .def_readwrite("min_scale", &ImageOptions::min_scale)
      .def_readwrite("max_scale", &ImageOptions::max_scale)
      .def_readwrite("min_ratio", &ImageOptions::min_ratio)
      .def_readwrite("max_ratio", &ImageOptions::max_ratio)
      .def_readwrite("random_flip", &ImageOptions::random_flip);
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
      .def_readwrite("image", &FieldSpec::image)
      .def("validate", [](const FieldSpec& f) { ThrowIfError(f.Validate()); });
}

}  // namespace shardloader::bindings
