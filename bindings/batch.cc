#include "bindings/batch.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

namespace shardloader::bindings {

namespace py = pybind11;

namespace {

py::array ToArray(const TensorView& view, const py::capsule& owner) {
  return py::array(py::dtype(std::string(DTypeName(view.dtype))),
                   std::vector<py::ssize_t>(view.shape.begin(), view.shape.end()), view.data,
                   owner);
}

}  // namespace

py::tuple BatchToPython(const Batch& batch) {
  // One capsule owns a reference to the batch memory; every array holds it.
  auto* memory = new std::shared_ptr<const void>(batch.memory());
  py::capsule owner(memory, [](void* p) { delete static_cast<std::shared_ptr<const void>*>(p); });
  py::list fields;
  for (const BatchField& field : batch.fields()) {
    fields.append(py::make_tuple(field.name, ToArray(field.values, owner),
                                 field.offsets.has_value()
                                     ? py::object(ToArray(*field.offsets, owner))
                                     : py::object(py::none())));
  }
  return py::make_tuple(batch.num_samples(), fields, py::cast(batch.keys()));
}

}  // namespace shardloader::bindings
