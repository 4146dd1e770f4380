// Uses symbols only libtorch_python exports (THPVariable_Wrap and friends), so a missing or
// unlinkable libtorch_python fails at link time, not at some user's import time.
#include <ATen/ATen.h>
#include <torch/csrc/autograd/python_variable.h>

namespace {
PyObject* make_tensor(PyObject* /*self*/, PyObject* /*args*/) {
  return THPVariable_Wrap(at::arange(4));
}

PyMethodDef methods[] = {
    {"make_tensor", make_tensor, METH_NOARGS, "torch.arange(4), made in C++"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "torch_python_consumer", nullptr, -1, methods};
}  // namespace

PyMODINIT_FUNC PyInit_torch_python_consumer() {
  return PyModule_Create(&module);
}
