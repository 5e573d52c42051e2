// tessel's side of tests/parity/cases_fft.py (include/tessel/fft.h).
#include "parity/parity.h"
#include "tessel/fft.h"

namespace ts = tessel;
using namespace tessel::parity;

namespace {
using OneD = Array (*)(const Array&, std::optional<int64_t>, int64_t, const std::string&);
using TwoD = Array (*)(const Array&, std::optional<ts::Shape>, const ts::Axes&, const std::string&);
using ND = Array (*)(const Array&, std::optional<ts::Shape>, std::optional<ts::Axes>, const std::string&);
Fn one_d(OneD f) {
  return [f](const In& x, const Params& p) { return out(f(x[0], p.opt_i("n"), p.i("axis"), p.s("norm"))); };
}
Fn two_d(TwoD f) {
  return [f](const In& x, const Params& p) { return out(f(x[0], p.opt_ints("s"), p.ints("axes"), p.s("norm"))); };
}
Fn n_d(ND f) {
  return [f](const In& x, const Params& p) { return out(f(x[0], p.opt_ints("s"), p.opt_ints("axes"), p.s("norm"))); };
}
}  // namespace

TESSEL_PARITY_CASES(fft) {
  reg("fft.fft", one_d(ts::fft::fft));
  reg("fft.ifft", one_d(ts::fft::ifft));
  reg("fft.rfft", one_d(ts::fft::rfft));
  reg("fft.irfft", one_d(ts::fft::irfft));
  reg("fft.fft2", two_d(ts::fft::fft2));
  reg("fft.ifft2", two_d(ts::fft::ifft2));
  reg("fft.rfft2", two_d(ts::fft::rfft2));
  reg("fft.irfft2", two_d(ts::fft::irfft2));
  reg("fft.fftn", n_d(ts::fft::fftn));
  reg("fft.ifftn", n_d(ts::fft::ifftn));
  reg("fft.rfftn", n_d(ts::fft::rfftn));
  reg("fft.irfftn", n_d(ts::fft::irfftn));
  reg("fft.lax_fft", [](const In& x, const Params& p) {
    const std::string t = p.s("fft_type");
    const auto type = t == "FFT"    ? ts::fft::FftType::FFT
                      : t == "IFFT" ? ts::fft::FftType::IFFT
                      : t == "RFFT" ? ts::fft::FftType::RFFT
                                    : ts::fft::FftType::IRFFT;
    return out(ts::fft::lax_fft(x[0], type, p.ints("fft_lengths")));
  });
  reg("fft.fftfreq", [](const In&, const Params& p) { return out(ts::fft::fftfreq(p.i("n"), p.f("d"), p.dtype("dtype"))); });
  reg("fft.rfftfreq",
      [](const In&, const Params& p) { return out(ts::fft::rfftfreq(p.i("n"), p.f("d"), p.dtype("dtype"))); });
  reg("fft.fftshift", [](const In& x, const Params& p) { return out(ts::fft::fftshift(x[0], p.opt_ints("axes"))); });
  reg("fft.ifftshift", [](const In& x, const Params& p) { return out(ts::fft::ifftshift(x[0], p.opt_ints("axes"))); });
}
