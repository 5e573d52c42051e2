// tessel.fft (jax.numpy.fft): the C++ functions of tessel/fft.h, bound from one table per
// family of signatures.
#include "common.h"
#include "tessel/fft.h"

namespace tessel::python {
namespace {

using Fft1Fn = Array (*)(const Array&, std::optional<int64_t>, int64_t, const std::string&);
using Fft2Fn = Array (*)(const Array&, std::optional<Shape>, const Axes&, const std::string&);
using FftNFn = Array (*)(const Array&, std::optional<Shape>, std::optional<Axes>, const std::string&);

const std::pair<const char*, Fft1Fn> kFft1[] = {
    {"fft", &fft::fft}, {"ifft", &fft::ifft}, {"rfft", &fft::rfft}, {"irfft", &fft::irfft}};
const std::pair<const char*, Fft2Fn> kFft2[] = {
    {"fft2", &fft::fft2}, {"ifft2", &fft::ifft2}, {"rfft2", &fft::rfft2}, {"irfft2", &fft::irfft2}};
const std::pair<const char*, FftNFn> kFftN[] = {
    {"fftn", &fft::fftn}, {"ifftn", &fft::ifftn}, {"rfftn", &fft::rfftn}, {"irfftn", &fft::irfftn}};

std::optional<Shape> optional_shape(nb::handle h) {
  if (h.is_none()) return std::nullopt;
  return to_shape(h);
}

std::string norm_of(nb::handle h) { return h.is_none() ? std::string("backward") : nb::cast<std::string>(h); }

}  // namespace

void bind_fft(nb::module_& m) {
  nb::module_ f = m.def_submodule("fft_functions", "C++ functions behind tessel.fft");
  for (auto [name, fn] : kFft1)
    f.def(name, [fn](nb::handle a, std::optional<int64_t> n, int64_t axis, nb::handle norm) {
      return fn(to_array(a), n, axis, norm_of(norm));
    }, nb::arg("a"), nb::arg("n").none() = nb::none(), nb::arg("axis") = -1, nb::arg("norm").none() = nb::none());
  for (auto [name, fn] : kFft2)
    f.def(name, [fn](nb::handle a, nb::handle s, nb::handle axes, nb::handle norm) {
      return fn(to_array(a), optional_shape(s), *to_axes(axes), norm_of(norm));
    }, nb::arg("a"), nb::arg("s").none() = nb::none(), nb::arg("axes") = nb::make_tuple(-2, -1),
       nb::arg("norm").none() = nb::none());
  for (auto [name, fn] : kFftN)
    f.def(name, [fn](nb::handle a, nb::handle s, nb::handle axes, nb::handle norm) {
      return fn(to_array(a), optional_shape(s), to_axes(axes), norm_of(norm));
    }, nb::arg("a"), nb::arg("s").none() = nb::none(), nb::arg("axes").none() = nb::none(),
       nb::arg("norm").none() = nb::none());
  f.def("fftfreq", [](int64_t n, double d, nb::handle dtype) {
    return fft::fftfreq(n, d, optional_dtype(dtype).value_or(default_float));
  }, nb::arg("n"), nb::arg("d") = 1.0, nb::arg("dtype").none() = nb::none());
  f.def("rfftfreq", [](int64_t n, double d, nb::handle dtype) {
    return fft::rfftfreq(n, d, optional_dtype(dtype).value_or(default_float));
  }, nb::arg("n"), nb::arg("d") = 1.0, nb::arg("dtype").none() = nb::none());
  f.def("fftshift", [](nb::handle x, nb::handle axes) { return fft::fftshift(to_array(x), to_axes(axes)); },
        nb::arg("x"), nb::arg("axes").none() = nb::none());
  f.def("ifftshift", [](nb::handle x, nb::handle axes) { return fft::ifftshift(to_array(x), to_axes(axes)); },
        nb::arg("x"), nb::arg("axes").none() = nb::none());
}

}  // namespace tessel::python
