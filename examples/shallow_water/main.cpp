// shallow_water: runs the shallow-water model of the mpi4jax paper with a jitted time
// step, then saves the surface height (.npy), a picture of it (.png) and an animation of the
// run (.gif).
//
//   shallow_water --nx 360 --ny 180 --days 10 --dtype float32 --out h.npy --png h.png --gif h.gif
//
// --days D runs D model days (ceil(D * 86400 / dt) steps); --steps N runs N steps.
// Alone it runs on one process. Under `mpirun -np N` (N = 1 or even, dividing the grid:
// ny by 2, nx by N / 2) it runs the paper's domain decomposition: each process steps its
// block, exchanging halos with comm::sendrecv inside the jitted step; process 0 gathers
// the fields for --out/--png and prints. For one core per process set
// TESSEL_NUM_THREADS=1, e.g.
//
//   mpirun -np 2 -x TESSEL_NUM_THREADS=1 shallow_water --nx 1800 --ny 900 --steps 200
//
// --check then also runs the single-process model on process 0 and compares the gathered
// fields with it (exit status 1 if they differ).
//
// --shard N runs the one-domain model (no decomposition, no comm calls) with its fields'
// rows split over N devices by a NamedSharding: the partitioner exchanges the halo rows.
// Alone, N virtual devices; under mpirun, a mesh over the processes' devices.
//
// --checkpoint-every K saves the model state every K steps (ts::checkpoints, asynchronous,
// the last 2 kept in --checkpoint-dir) and --restart resumes from the latest: N steps, then
// a restart up to N + M, gives the same fields bit for bit as N + M steps in one go. Alone
// and with --shard the checkpoint holds the whole fields (restorable on any layout);
// decomposed, each process's block with its halo (restart with the same mpirun -np and --halo).
//
// --netcdf FILE.nc writes h, u and v every --netcdf-every K steps (default: as the
// animation's frames) to a NetCDF-4 file following the CF conventions (netcdf_output.h), in
// parallel when decomposed: each process writes its own block.
//
// A progress bar on process 0 is drawn by an id_tap inside the jitted step (the device hands
// the step number to the host and goes on; --no-progress turns it off): model days done and
// an estimate of the time left. Prints progress lines, `compile_seconds <t>` (tracing the two
// step variants, fusing them and generating and compiling their kernels) and `seconds <t>`
// (the time-stepping loop alone, without the animation frames' rendering, reported as
// `frame_seconds`; decomposed: from a barrier before the first step to a barrier after
// every process finished), `ms_per_step`, and `best_window_ms_per_step` (the fastest stretch
// of 10 steps between two waits, after the first: the figure that holds still on a shared
// machine).
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gif.h"
#include "netcdf_output.h"
#include "npy.h"
#include "tessel/checkpoint.h"
#include "plot.h"
#include "shallow_water.h"
#include "tessel/distributed.h"

namespace sw = shallow_water;
namespace ts = tessel;

namespace {

struct Options {
  int64_t nx = 360, ny = 180, steps = 1000;
  double days = 0;  // > 0: run this many model days (overrides steps)
  ts::DType dtype = ts::f32;
  std::string out, png, gif;
  int64_t frames = 100;  // animation frames over the run (--gif)
  double eta_range = 10.0;  // PLOT_ETA_RANGE of the original; <= 0 is automatic
  bool use_jit = true;
  bool print_program = false;
  bool progress = true;
  int halo = sw::Decomposition::kStepHalo;
  bool check = false;  // compare with the single-process model (on process 0)
  int64_t shard = 0;   // > 0: the single-domain model jitted with rows split over this many devices
  int64_t checkpoint_every = 0;  // > 0: save the state every this many steps (ts::checkpoints)
  std::string checkpoint_dir = "shallow_water_checkpoints";
  bool restart = false;  // resume from the latest checkpoint in checkpoint_dir
  std::string netcdf;         // CF NetCDF-4 output of h, u, v
  int64_t netcdf_every = 0;   // a frame every this many steps (0: as the animation's)
};

[[noreturn]] void usage(const std::string& error) {
  std::fprintf(stderr,
               "%s\nusage: shallow_water [--nx NX] [--ny NY] [--steps N | --days D] [--dtype float32|float64]\n"
               "                     [--out FILE.npy] [--png FILE.png] [--gif FILE.gif [--frames N]]\n"
               "                     [--eta-range M (0: auto)] [--no-jit] [--check]\n"
               "                     [--halo ROWS] [--print-program] [--no-progress] [--shard N]\n"
               "                     [--checkpoint-every K] [--checkpoint-dir DIR] [--restart]\n"
               "                     [--netcdf FILE.nc [--netcdf-every K]]\n"
               "       under mpirun -np N: the paper's domain decomposition over N processes\n"
               "       --shard N: the one-domain model with rows split over N devices by a NamedSharding\n"
               "                  (virtual devices of this process, or under mpirun the devices of all processes)\n",
               error.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage("missing value after " + a);
      return argv[++i];
    };
    auto integer = [&](int64_t min) {
      const std::string v = value();
      char* end = nullptr;
      const long long n = std::strtoll(v.c_str(), &end, 10);
      if (*end != '\0' || n < min) usage(a + " needs an integer >= " + std::to_string(min) + ", got '" + v + "'");
      return int64_t(n);
    };
    if (a == "--nx") o.nx = integer(2);
    else if (a == "--ny") o.ny = integer(2);
    else if (a == "--steps") o.steps = integer(1);
    else if (a == "--out") o.out = value();
    else if (a == "--png") o.png = value();
    else if (a == "--gif") o.gif = value();
    else if (a == "--frames") o.frames = integer(1);
    else if (a == "--days") {
      const std::string v = value();
      char* end = nullptr;
      o.days = std::strtod(v.c_str(), &end);
      if (*end != '\0' || !(o.days > 0) || o.days > 1e6) usage("--days needs a number of days in (0, 1e6], got '" + v + "'");
    }
    else if (a == "--eta-range") o.eta_range = std::atof(value().c_str());
    else if (a == "--no-jit") o.use_jit = false;
    else if (a == "--check") o.check = true;
    else if (a == "--print-program") o.print_program = true;
    else if (a == "--no-progress") o.progress = false;
    else if (a == "--halo") o.halo = int(integer(1));
    else if (a == "--shard") o.shard = integer(1);
    else if (a == "--checkpoint-every") o.checkpoint_every = integer(1);
    else if (a == "--checkpoint-dir") o.checkpoint_dir = value();
    else if (a == "--restart") o.restart = true;
    else if (a == "--netcdf") o.netcdf = value();
    else if (a == "--netcdf-every") o.netcdf_every = integer(1);
    else if (a == "--dtype") {
      const std::string d = value();
      if (d == "float32") o.dtype = ts::f32;
      else if (d == "float64") o.dtype = ts::f64;
      else usage("--dtype must be float32 or float64, got '" + d + "'");
    } else if (a == "-h" || a == "--help") {
      usage("shallow_water: the mpi4jax paper's shallow-water demo");
    } else {
      usage("unknown argument '" + a + "'");
    }
  }
  if (o.days > 0) o.steps = int64_t(std::ceil(o.days * sw::kDayInSeconds / sw::ShallowWater::dt()));
  return o;
}

// Fails now, not after the run, when `path` (given with `flag`) cannot be written.
void check_writable(const std::string& flag, const std::string& path) {
  if (path.empty()) return;
  std::error_code ec;
  const bool existed = std::filesystem::exists(path, ec);
  std::FILE* f = std::fopen(path.c_str(), "ab");
  if (!f) usage(flag + ": cannot write '" + path + "': " + std::strerror(errno) + "; choose a writable path");
  std::fclose(f);
  if (!existed) std::remove(path.c_str());
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<double> host(const ts::Array& a) { return a.to_vector<double>(); }

// Largest |a - b| (NaN counts as infinitely large).
double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(a[i] - b[i]);
    if (!(d <= m)) m = d;
  }
  return m;
}

// --shard N on one process: N virtual devices unless TESSEL_CPU_DEVICES says otherwise;
// under mpirun (N divisible by the processes) N / processes each. Before tessel starts.
void set_shard_devices(int64_t shard) {
  if (std::getenv("TESSEL_CPU_DEVICES")) return;
  const char* world = std::getenv("OMPI_COMM_WORLD_SIZE");
  const int64_t procs = world ? std::max<int64_t>(1, std::atoll(world)) : 1;
  if (shard % procs != 0)
    usage("--shard " + std::to_string(shard) + " does not divide over " + std::to_string(procs) + " processes");
  setenv("TESSEL_CPU_DEVICES", std::to_string(shard / procs).c_str(), 1);
}

// The mesh of --shard N: N devices, spread over the processes in process order.
ts::Mesh shard_mesh(int64_t shard) {
  const auto all = ts::devices();
  if (int64_t(all.size()) < shard)
    throw ts::ValueError("shallow_water: --shard " + std::to_string(shard) + " needs " + std::to_string(shard) +
                         " devices but the job has " + std::to_string(all.size()) +
                         "; set TESSEL_CPU_DEVICES (per process) so that there are enough");
  return ts::make_mesh({shard}, {"y"});
}

}  // namespace

int main(int argc, char** argv) try {
  const Options opt = parse(argc, argv);
  const bool sharded = opt.shard > 0;
  if (sharded) set_shard_devices(opt.shard);
  // Under mpirun this joins the job; alone it does nothing (and MPI is never called).
  ts::distributed::initialize();
  const sw::Decomposition decomposition = ts::process_count() > 1 && !sharded
                                              ? sw::Decomposition::of(ts::comm::world(), opt.halo)
                                              : sw::Decomposition{};
  const bool decomposed = decomposition.size() > 1, root = ts::process_index() == 0;
  // --shard: the one-domain model, its fields' rows split over a mesh of `shard` devices.
  const std::optional<ts::Mesh> mesh = sharded ? std::optional(shard_mesh(opt.shard)) : std::nullopt;
  auto laid_out = [&](const ts::Array& a, ts::PartitionSpec spec) {
    return mesh ? ts::device_put(a, ts::NamedSharding(*mesh, std::move(spec))) : a;
  };
  // A whole field readable in every process (the pieces of a sharded one may be elsewhere).
  auto whole = [&](const ts::Array& a) { return laid_out(a, ts::P()); };
  if (root) {  // process 0 writes them, after the run
    check_writable("--out", opt.out);
    check_writable("--png", opt.png);
    check_writable("--gif", opt.gif);
    check_writable("--netcdf", opt.netcdf);
  }
  const sw::ShallowWater model({.nx = opt.nx, .ny = opt.ny, .dtype = opt.dtype}, decomposition);
  const double dt = sw::ShallowWater::dt();
  if (root) {
    std::printf("shallow_water: %lld x %lld interior cells, %s, dt = %.3f s, %lld steps (%.2f model days), %s\n",
                (long long)opt.nx, (long long)opt.ny, ts::dtype_name(opt.dtype), dt, (long long)opt.steps,
                double(opt.steps) * dt / sw::kDayInSeconds, opt.use_jit ? "jit" : "eager");
    if (sharded)
      std::printf("sharding: rows split over %lld devices (%zu process%s) by NamedSharding(%s, P('y', None)): "
                  "plain jit, no comm calls\n",
                  (long long)opt.shard, size_t(ts::process_count()), ts::process_count() > 1 ? "es" : "",
                  mesh->to_string().c_str());
    if (decomposed)
      std::printf("decomposition: %d processes as %d x %d blocks of %lld x %lld cells, halo exchange by "
                  "comm::sendrecv (%s)\n",
                  decomposition.size(), decomposition.nproc_y, decomposition.nproc_x, (long long)model.ny_local(),
                  (long long)model.nx_local(),
                  decomposition.exchanges_per_step()
                      ? (std::to_string(decomposition.halo) + " rows in y once per step").c_str()
                      : "one line at every boundary enforcement");
  }

  sw::State state = model.initial_state();
  if (sharded)
    for (ts::Array* f : {&state.h, &state.u, &state.v, &state.dh, &state.du, &state.dv}) *f = laid_out(*f, ts::P("y", ts::none));
  // Checkpoints of the whole state (docs/checkpoint.md): every --checkpoint-every steps, and
  // --restart resumes from the latest, so N steps + restart + M steps equal N + M steps.
  // Decomposed, each process's block (interior and halo, of one shape on every process)
  // is piece p of a (processes, rows, cols) array over one device per process, which the
  // checkpoint writes block by block; the layout is recorded and checked on restart.
  std::optional<ts::Sharding> per_process;
  if (decomposed) {
    std::vector<ts::Device> one_each;
    for (int p = 0; p < ts::process_count(); ++p)
      for (const ts::Device& d : ts::devices())
        if (d.process_index() == p) {
          one_each.push_back(d);
          break;
        }
    per_process = ts::NamedSharding(ts::Mesh(one_each, {int64_t(one_each.size())}, {"p"}), ts::P("p", ts::none, ts::none));
  }
  auto to_checkpoint = [&](const sw::State& s) {
    if (!per_process) return s;
    sw::State out = s;
    const ts::Device mine = per_process->device_set()[size_t(ts::process_index())];
    for (ts::Array* f : {&out.h, &out.u, &out.v, &out.dh, &out.du, &out.dv}) {
      const ts::Shape shape = f->shape();
      const ts::Array block = ts::reshape(ts::device_put(*f, ts::SingleDeviceSharding(mine)), {1, shape[0], shape[1]});
      *f = ts::make_array_from_single_device_arrays({int64_t(ts::process_count()), shape[0], shape[1]}, *per_process, {block});
    }
    return out;
  };
  auto from_checkpoint = [&](const sw::State& stacked, const sw::State& like) {
    if (!per_process) return stacked;
    sw::State out = like;
    const ts::Array* from[] = {&stacked.h, &stacked.u, &stacked.v, &stacked.dh, &stacked.du, &stacked.dv};
    ts::Array* to[] = {&out.h, &out.u, &out.v, &out.dh, &out.du, &out.dv};
    for (size_t i = 0; i < 6; ++i) {
      const ts::Array block = from[i]->addressable_shards().at(0).data;
      *to[i] = ts::device_put(ts::reshape(block, to[i]->shape()), to[i]->sharding());
    }
    return out;
  };
  // What a checkpoint must match to restart this run.
  const std::string layout = std::string("{\"nx\": ") + std::to_string(opt.nx) + ", \"ny\": " + std::to_string(opt.ny) +
                             ", \"dtype\": \"" + ts::dtype_name(opt.dtype) + "\", \"layout\": \"" +
                             (decomposed ? "blocks of " + std::to_string(decomposition.size()) + " processes, halo " +
                                               std::to_string(decomposition.halo)
                                         : std::string("whole fields")) +
                             "\"}";
  std::optional<ts::checkpoints::CheckpointManager> checkpoints;
  int64_t first_k = 0;
  if (opt.checkpoint_every > 0 || opt.restart) {
    checkpoints.emplace(opt.checkpoint_dir, ts::checkpoints::ManagerOptions{
                                                .max_to_keep = 2, .save_interval_steps = std::max<int64_t>(1, opt.checkpoint_every), .async = true});
  }
  if (opt.restart && checkpoints->latest_step() >= 0) {
    first_k = checkpoints->latest_step();
    const std::string saved = ts::checkpoints::read_metadata(checkpoints->path(first_k)).metadata_json;
    if (saved != layout)
      throw ts::ValueError("shallow_water --restart: the checkpoint " + checkpoints->path(first_k) + " holds " +
                           (saved.empty() ? std::string("no layout record (an older demo wrote it)") : saved) +
                           " but this run is " + layout +
                           "; restart with the same grid, dtype and decomposition (mpirun -np, --halo); "
                           "--shard N checkpoints hold whole fields, which restart on any number of processes");
    state = from_checkpoint(checkpoints->restore(first_k, to_checkpoint(state)), state);
    if (root) std::printf("restart: from step %lld of %s\n", (long long)first_k, opt.checkpoint_dir.c_str());
  }
  state.h.block_until_ready();

  // The progress bar: the jitted step hands its step number to the host (an id_tap), which
  // redraws the bar on process 0 whenever it grows, while the device goes on. The time left
  // is extrapolated from the steps done since the loop started (`loop_start`, set below).
  const int64_t steps = opt.steps;
  const auto loop_start = std::make_shared<std::atomic<int64_t>>(0);  // steady_clock ticks
  auto progress = [steps, dt, root, loop_start, show = opt.progress](const ts::Array& k, const ts::host::Transforms&) {
    if (!show || !root) return;
    constexpr int64_t kWidth = 40;
    const int64_t done = k.item<int64_t>() + 1, filled = done * kWidth / steps;
    if (done != steps && filled == (done - 1) * kWidth / steps) return;  // the bar did not grow
    const auto start = std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(loop_start->load()));
    const double left = since(start) / double(done) * double(steps - done);
    std::printf("\rprogress [%s%s] %3lld%%  day %.2f/%.2f  ETA %4.0f s", std::string(size_t(filled), '#').c_str(),
                std::string(size_t(kWidth - filled), ' ').c_str(), (long long)(100 * done / steps),
                double(done) * dt / sw::kDayInSeconds, double(steps) * dt / sw::kDayInSeconds, left);
    std::fflush(stdout);
  };
  auto step_fn = [model, progress](const sw::State& s, bool first_step, const ts::Array& k) {
    ts::host::id_tap(progress, k, {.name = "progress"});
    return model.step(s, first_step);
  };
  std::vector<std::optional<ts::Sharding>> out_shardings;
  if (mesh) out_shardings = {ts::NamedSharding(*mesh, ts::P("y", ts::none))};
  auto jitted = ts::jit(step_fn, {.static_argnums = {1}, .donate_argnums = {0}, .out_shardings = out_shardings});
  auto step = [&](const sw::State& s, bool first, int64_t k) {
    const ts::Array number = ts::Array(int32_t(k));
    return opt.use_jit ? jitted(s, first, number) : step_fn(s, first, number);
  };

  // Trace and compile both variants (first step and Adams-Bashforth) before timing: compile()
  // fuses the programs and generates, compiles (or loads from the kernel cache) their code.
  auto t0 = std::chrono::steady_clock::now();
  if (opt.use_jit) {
    const ts::Array number = ts::Array(int32_t(0));
    jitted.lower(state, true, number).compile();
    const ts::Compiled compiled = jitted.lower(state, false, number).compile();
    // The Adams-Bashforth step as compiled: its loop nests and the steps between them.
    if (opt.print_program && root) std::printf("%s\n", compiled.as_text().c_str());
  }
  if (root) std::printf("compile_seconds %.4f\n", since(t0));

  // The animation: a frame of the whole domain every `frame_every` steps (gathering is
  // collective when decomposed; process 0 renders). Its time is kept out of `seconds`.
  std::unique_ptr<sw::GifWriter> gif;
  const int64_t frame_every = std::max<int64_t>(1, opt.steps / opt.frames);
  double frame_seconds = 0;
  auto add_frame = [&](const sw::State& s, int64_t steps_done) {
    if (opt.gif.empty()) return;
    const auto f0 = std::chrono::steady_clock::now();
    const ts::Array fh = model.gather_interior(whole(s.h)), fu = model.gather_interior(whole(s.u)),
                    fv = model.gather_interior(whole(s.v));
    if (root) {
      sw::PlotInput plot{.nx = opt.nx, .ny = opt.ny, .eta = host(fh - sw::kDepth), .u = host(fu), .v = host(fv),
                         .eta_range = opt.eta_range, .time_days = double(steps_done) * dt / sw::kDayInSeconds};
      const sw::Image img = sw::plot_surface(plot);
      if (!gif) gif = std::make_unique<sw::GifWriter>(opt.gif, img.width, img.height, /*delay_centiseconds=*/8);
      gif->add_frame(img);
    }
    frame_seconds += since(f0);
  };
  add_frame(state, first_k);

  // The NetCDF output: each frame's blocks written by their processes (decomposed, parallel
  // NetCDF), else the whole fields by process 0. HDF5 is not thread-safe, so a frame waits
  // for an asynchronous checkpoint save in flight (whose writer calls HDF5 too). A restarted
  // run writes its own file, from the restart step on.
  std::unique_ptr<sw::NetcdfWriter> netcdf;
  const int64_t netcdf_every = opt.netcdf_every > 0 ? opt.netcdf_every : frame_every;
  const bool netcdf_blocks = decomposed && sw::NetcdfWriter::parallel();
  double netcdf_seconds = 0;
  auto add_netcdf_frame = [&](const sw::State& s, int64_t steps_done) {
    const auto f0 = std::chrono::steady_clock::now();
    sw::Block block;
    ts::Array fh, fu, fv;
    if (netcdf_blocks) {
      fh = model.block_interior(s.h), fu = model.block_interior(s.u), fv = model.block_interior(s.v);
      block = {.row0 = decomposition.py * model.ny_local(), .col0 = decomposition.px * model.nx_local(),
               .rows = model.ny_local(), .cols = model.nx_local()};
    } else {
      fh = model.gather_interior(whole(s.h)), fu = model.gather_interior(whole(s.u)), fv = model.gather_interior(whole(s.v));
      if (root) block = {.row0 = 0, .col0 = 0, .rows = opt.ny, .cols = opt.nx};
    }
    if (checkpoints) checkpoints->wait_until_finished();
    if (netcdf)  // every process when collective, else process 0
      netcdf->write_frame(double(steps_done) * dt / sw::kDayInSeconds, block, block.rows ? host(fh) : std::vector<double>{},
                          block.rows ? host(fu) : std::vector<double>{}, block.rows ? host(fv) : std::vector<double>{});
    netcdf_seconds += since(f0);
  };
  if (!opt.netcdf.empty()) {
    // Every process opens the file when the build writes in parallel, else process 0 alone.
    const bool collective = ts::process_count() > 1 && sw::NetcdfWriter::parallel();
    if (collective || root) netcdf = std::make_unique<sw::NetcdfWriter>(opt.netcdf, model.config(), collective);
    add_netcdf_frame(state, first_k);
  }

  // The range of h over the whole domain (every process takes part when decomposed).
  auto h_range = [&](const sw::State& s) {
    const ts::Array h = model.block_interior(s.h);
    ts::Array lo = ts::min(h), hi = ts::max(h);
    if (decomposed) {
      lo = ts::comm::allreduce(lo, ts::comm::MIN, decomposition.comm);
      hi = ts::comm::allreduce(hi, ts::comm::MAX, decomposition.comm);
    }
    return std::pair(lo.item<double>(), hi.item<double>());
  };

  const int64_t report_every = std::max<int64_t>(1, opt.steps / 10);
  if (decomposed) ts::comm::barrier(decomposition.comm);
  t0 = std::chrono::steady_clock::now();
  loop_start->store(t0.time_since_epoch().count());
  // Wait for h every 10 steps, as the original does after each 10-step multistep call. Eager
  // steps wait every step: each dispatches ~300 ops, and outputs are allocated at dispatch,
  // so running far ahead of the device stream would hold hundreds of megabytes.
  const int64_t sync_every = opt.use_jit ? 10 : 1;
  // The fastest stretch between two such waits (without frames or reports in it), per step:
  // on a machine shared with other work, the stretch nothing else interrupted.
  double best_window = 0;
  auto window_start = std::chrono::steady_clock::now();
  for (int64_t k = first_k; k < opt.steps; ++k) {
    state = step(state, k == 0, k);
    if (checkpoints && opt.checkpoint_every > 0 && checkpoints->should_save(k + 1))
      checkpoints->save(k + 1, to_checkpoint(state), layout);
    if (!opt.netcdf.empty() && ((k + 1) % netcdf_every == 0 || k + 1 == opt.steps)) add_netcdf_frame(state, k + 1);
    if ((k + 1) % sync_every == 0) {
      state.h.block_until_ready();
      const double per_step = since(window_start) / double(sync_every);
      if (k + 1 > sync_every && (best_window == 0 || per_step < best_window)) best_window = per_step;  // not the first
    }
    if ((k + 1) % frame_every == 0 || k + 1 == opt.steps) add_frame(state, k + 1);
    if ((k + 1) % report_every == 0 || k + 1 == opt.steps) {
      // Reading the interior waits for the step; it costs one copy every tenth of the run.
      const auto [lo, hi] = h_range(state);
      ts::host::barrier_wait("report");  // the bar has been drawn up to this step
      if (root)
        std::printf("%sstep %lld/%lld  t = %.3f days  h in [%.3f, %.3f] m\n", opt.progress ? "\r\033[K" : "",
                    (long long)(k + 1), (long long)opt.steps, double(k + 1) * dt / sw::kDayInSeconds, lo, hi);
      std::fflush(stdout);
    }
    if ((k + 1) % sync_every == 0) window_start = std::chrono::steady_clock::now();
  }
  // Wait for every field (the steps run asynchronously), so the time covers all the work.
  for (const ts::Array& a : ts::tree_leaves(state)) a.block_until_ready();
  if (checkpoints) checkpoints->wait_until_finished();
  if (decomposed) ts::comm::barrier(decomposition.comm);
  const double seconds = since(t0) - frame_seconds - netcdf_seconds;
  if (root) {
    std::printf("seconds %.4f\n", seconds);
    if (gif) std::printf("frame_seconds %.4f\n", frame_seconds);
    if (netcdf) std::printf("netcdf_seconds %.4f\n", netcdf_seconds);
    std::printf("ms_per_step %.4f\n", 1e3 * seconds / double(opt.steps));
    if (best_window > 0) std::printf("best_window_ms_per_step %.4f\n", 1e3 * best_window);
  }

  // The whole fields on process 0 (collective when decomposed).
  const ts::Array h = model.gather_interior(whole(state.h));
  const ts::Array u = opt.png.empty() && !opt.check ? ts::Array() : model.gather_interior(whole(state.u));
  const ts::Array v = opt.png.empty() && !opt.check ? ts::Array() : model.gather_interior(whole(state.v));
  int status = 0;
  if (root && opt.check) {
    // The single-process model from the same initial state, stepped alike.
    const sw::ShallowWater single({.nx = opt.nx, .ny = opt.ny, .dtype = opt.dtype});
    auto single_step = ts::jit([single](const sw::State& s, bool first) { return single.step(s, first); },
                               {.static_argnums = {1}});
    sw::State s = single.initial_state();
    for (int64_t k = 0; k < opt.steps; ++k) s = opt.use_jit ? single_step(s, k == 0) : single.step(s, k == 0);
    const double dh = max_abs_diff(host(h), host(sw::interior(s.h)));
    const double du = max_abs_diff(host(u), host(sw::interior(s.u)));
    const double dv = max_abs_diff(host(v), host(sw::interior(s.v)));
    // The decomposed step computes every cell with the same operations on the same values
    // (the fields come out bit for bit equal here); only the grouping of fused loops
    // differs, which a compiler could round differently (a*b+c contracted), so allow a few
    // ulps of h (100 m) per hundred steps.
    // Sharded, the partitioner groups the step's loops around its halo exchanges: the same
    // bounds as issue 20 sets, 1e-4 m in float32 and 1e-10 m in float64.
    const double ulps = 16 * std::max(1.0, double(opt.steps) / 100.0);
    const double tolerance = sharded ? (opt.dtype == ts::f32 ? 1e-4 : 1e-10)
                                     : ulps * sw::kDepth * (opt.dtype == ts::f32 ? 0x1p-23 : 0x1p-52);
    const bool ok = dh <= tolerance && du <= tolerance && dv <= tolerance;
    const std::string who = sharded ? std::to_string(opt.shard) + "-device sharded"
                                    : std::to_string(decomposition.size()) + "-process";
    std::printf("check: %s fields %s the single-process ones (max |diff| h %.3g m, u %.3g m/s, v %.3g m/s; "
                "tolerance %.3g)\n",
                who.c_str(), ok ? "match" : "DIFFER FROM", dh, du, dv, tolerance);
    status = ok ? 0 : 1;
  }

  if (root && !opt.out.empty()) {
    if (opt.dtype == ts::f32) sw::write_npy(opt.out, h.to_vector<float>(), {opt.ny, opt.nx});
    else sw::write_npy(opt.out, h.to_vector<double>(), {opt.ny, opt.nx});
    std::printf("wrote %s\n", opt.out.c_str());
  }
  if (root && !opt.png.empty()) {
    sw::PlotInput plot{.nx = opt.nx, .ny = opt.ny, .eta = host(h - sw::kDepth), .u = host(u), .v = host(v),
                       .eta_range = opt.eta_range, .time_days = double(opt.steps) * dt / sw::kDayInSeconds};
    sw::write_png(opt.png, sw::plot_surface(plot));
    std::printf("wrote %s\n", opt.png.c_str());
  }
  if (netcdf) {
    netcdf->close();
    if (root) std::printf("wrote %s (%lld frames)\n", opt.netcdf.c_str(), (long long)netcdf->frames());
  }
  if (gif) {
    gif->close();
    std::printf("wrote %s (%d frames)\n", opt.gif.c_str(), gif->frames());
  }
  // Wait here rather than in the runtime's exit handler (which would also drain them).
  for (const ts::Array& a : ts::tree_leaves(state)) a.block_until_ready();
  if (h.valid()) h.block_until_ready();
  return status;
} catch (const std::exception& e) {
  std::fprintf(stderr, "shallow_water: error: %s\n", e.what());
  return 1;
}
