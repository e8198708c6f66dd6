/// @file emulated_sampling.cpp
/// @brief The emulated grader's side of sampled calls: which calls are sampled, the lazy contents
///        of their tensors (inputs, poison, guard and padding markers), the rows the emulator must
///        see written, and the rows the checks then visit.
#include "app/emulated_sampling.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "emu/control.h"
#include "engine/device_tensor.h"
#include "engine/gpu_case.h"
#include "engine/poison.h"
#include "engine/sampling_hooks.h"
#include "workbook/inputs.h"

namespace workbook::emulated {
namespace {

/// Cases past this many elements are run only on a sample, or not at all on a CPU.
constexpr int64_t kWholeElements = int64_t(1) << 27;

/// A repetition after the first of a call that cannot be sampled is left out past this many elements:
/// its checks read every row, and the first repetition has run it whole (lessons 10 and 11, whose
/// largest cases would otherwise take most of a lesson's CPU budget twice).
constexpr int64_t kRepeatWholeElements = int64_t(1) << 16;

/// The case running now (set by the wrapper sample_if_large puts around a case).
struct RunningCase {
    bool sampled = false;  ///< its calls run on a sample of blocks where their checks allow it
    bool repeat = false;   ///< a repetition after the first
    int64_t elements = 0;
    uint64_t seed = 0;
};
RunningCase g_case;

/// Thrown by begin_call to leave out a repetition (kRepeatWholeElements); the wrapper counts it a pass.
struct RepeatLeftOut {};

/// One tensor of the open sampled call: its lazy contents are an input's values, or poison.
struct Lazy {
    const DeviceTensor* tensor = nullptr;
    bool input = false;
    ValueSpec spec;
};
bool g_open = false;
bool g_profiling = false;
std::vector<Lazy> g_lazy;

/// The bytes of `v` stored as `dtype`.
void put_value(DType dtype, float v, unsigned char* out) {
    switch (dtype) {
        case DType::f32: std::memcpy(out, &v, 4); break;
        case DType::f16: { const __half h = Elem<__half>::from_float(v); std::memcpy(out, &h, 2); break; }
        case DType::bf16: { const __nv_bfloat16 h = Elem<__nv_bfloat16>::from_float(v); std::memcpy(out, &h, 2); break; }
        case DType::e4m3: { const E4m3 q = Elem<E4m3>::from_float(v); std::memcpy(out, &q, 1); break; }
    }
}

/// The poison of an output element stored as `dtype` (engine/poison.h), as poison_output writes it.
void put_poison(DType dtype, unsigned char* out) {
    switch (dtype) {
        case DType::f32: { const auto b = Poison<float>::bits; std::memcpy(out, &b, sizeof b); break; }
        case DType::f16: { const auto b = Poison<__half>::bits; std::memcpy(out, &b, sizeof b); break; }
        case DType::bf16: { const auto b = Poison<__nv_bfloat16>::bits; std::memcpy(out, &b, sizeof b); break; }
        case DType::e4m3: { const auto b = Poison<E4m3>::bits; std::memcpy(out, &b, sizeof b); break; }
    }
}

/// Row and column of element `e` (from the first element) of `l`; false for padding.
bool row_col(const Layout& l, int64_t e, int64_t& row, int64_t& col) {
    const int64_t group = e / l.outer_stride, rest = e % l.outer_stride;
    if (l.heads == 1) {
        row = group;
        col = rest;
        return group < l.rows && rest < l.cols;
    }
    const int64_t head = rest / l.inner_stride;
    row = group * l.heads + head;
    col = rest % l.inner_stride;
    return group < l.rows / l.heads && head < l.heads && col < l.cols;
}

/// What fill_input or poison_output would have written into bytes [offset, offset + bytes) of the
/// tensor's allocation (guards and padding hold the marker).
void contents(const Lazy& z, std::size_t offset, std::size_t bytes, unsigned char* out) {
    const DeviceTensor& t = *z.tensor;
    const std::size_t size = dtype_size(t.dtype()), lead = t.lead_bytes(), end = lead + t.span_bytes();
    const Layout& l = t.layout();
    std::size_t o = offset;
    const std::size_t stop = offset + bytes;
    while (o < stop) {
        if (o < lead || o >= end) {
            const std::size_t run = o < lead ? std::min(stop, lead) - o : stop - o;
            std::memset(out + (o - offset), kMarkerByte, run);
            o += run;
            continue;
        }
        const int64_t e = static_cast<int64_t>((o - lead) / size);
        int64_t r = 0, c = 0;
        unsigned char* dst = out + (o - offset);
        if (!row_col(l, e, r, c)) std::memset(dst, kMarkerByte, size);
        else if (!z.input) put_poison(t.dtype(), dst);
        else put_value(t.dtype(), raw_value(z.spec, r, c, l.cols), dst);
        o += size;
    }
}

const Lazy* find(const DeviceTensor& t) {
    for (const Lazy& z : g_lazy)
        if (z.tensor == &t) return &z;
    return nullptr;
}

/// Byte range of row r in the allocation: its first element to the next row's first (the padding
/// after it included), or, with `owned_only`, to its last element.
std::pair<std::size_t, std::size_t> row_bytes(const DeviceTensor& t, int64_t r, bool owned_only) {
    const Layout& l = t.layout();
    const std::size_t size = dtype_size(t.dtype()), lead = t.lead_bytes();
    const int64_t first = l.offset(r, 0);
    const int64_t end = owned_only ? first + l.cols : r + 1 < l.rows ? l.offset(r + 1, 0) : l.span();
    return {lead + static_cast<std::size_t>(first) * size, lead + static_cast<std::size_t>(end) * size};
}

/// The rows the grader checks in any sampled call, whatever the sample: the first, the middle and the
/// last, and three drawn from the case's seed.
std::vector<int64_t> target_rows(const Layout& l, uint64_t salt) {
    std::vector<int64_t> rows;
    if (l.rows == 0) return rows;
    rows = {0, l.rows / 2, l.rows - 1};
    for (int i = 0; i < 3; ++i) rows.push_back(static_cast<int64_t>(mix64(g_case.seed ^ mix64(salt + i)) % l.rows));
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    return rows;
}

/// The rows whose bytes (to the next row) meet [lo, hi) of the allocation.
void rows_meeting(const DeviceTensor& t, std::size_t lo, std::size_t hi, std::vector<int64_t>& out) {
    const int64_t rows = t.layout().rows;
    // The first row ending after lo, then every row starting before hi.
    int64_t a = 0, b = rows;
    while (a < b) {
        const int64_t m = a + (b - a) / 2;
        if (row_bytes(t, m, false).second > lo) b = m;
        else a = m + 1;
    }
    for (int64_t r = a; r < rows && row_bytes(t, r, false).first < hi; ++r) out.push_back(r);
}

/// True when the owned bytes of row r differ from the lazy contents (the sample wrote into it).
bool row_changed(const Lazy& z, int64_t r, std::vector<unsigned char>& scratch) {
    const auto [lo, hi] = row_bytes(*z.tensor, r, true);
    scratch.resize(hi - lo);
    contents(z, lo, hi - lo, scratch.data());
    return std::memcmp(scratch.data(), z.tensor->base() + lo, hi - lo) != 0;
}

/// A call may be sampled when the engine's own checks judge it: none of a lesson's own fills,
/// compares or checks (they read every row), no determinism reruns (they compare every byte), and
/// no grader kernel writing its tensors between launches (the emulator does not watch those writes,
/// so a lazy chunk would later be given its first contents over them).
bool sampleable(const GpuCall& call) {
    if (call.check || call.identical_reruns > 0 || call.launches_when_empty || call.grader_writes) return false;
    for (const TensorRole& r : call.tensors)
        if (r.fill || r.check_input || r.compare || r.scratch || r.kind == OutputKind::external) return false;
    return true;
}

void begin_call(const GpuCall& call) {
    if (g_profiling) {
        // Nothing is checked: any call can run on sampled blocks. A tensor a lesson fills itself is
        // filled whole, as usual; the others get their contents lazily.
        g_open = true;
        g_lazy.clear();
        emu::begin_sampled_call(0x7aff1cull);
        return;
    }
    if (!g_case.sampled) return;
    if (!sampleable(call)) {
        if (g_case.repeat && g_case.elements > kRepeatWholeElements) throw RepeatLeftOut{};
        if (g_case.elements > kWholeElements)
            throw std::runtime_error("the CPU emulator runs a case of more than 2^27 elements only on a sample of its "
                                     "blocks, and this case's checks read every row (the GPU grader runs it)");
        return;
    }
    g_open = true;
    g_lazy.clear();
    emu::begin_sampled_call(mix64(g_case.seed ^ 0x5a4d91edull));
}

void end_call() {
    if (!g_open) return;
    g_open = false;
    g_lazy.clear();
    emu::end_sampled_call();
}

bool lazy_contents(const DeviceTensor& t, const ValueSpec* spec) {
    if (!g_open || t.layout().rows == 0) return false;
    Lazy z;
    z.tensor = &t;
    z.input = spec != nullptr;
    if (spec) z.spec = *spec;
    g_lazy.push_back(z);
    std::vector<emu::TargetRow> targets;
    for (int64_t r : target_rows(t.layout(), g_lazy.size())) {
        const auto [lo, hi] = row_bytes(t, r, true);
        targets.push_back(emu::TargetRow{r, lo, hi});
    }
    const Layout layout = t.layout();
    const std::size_t lead = t.lead_bytes(), size = dtype_size(t.dtype()), end = lead + t.span_bytes();
    emu::add_lazy_range(
        t.base(), t.total_bytes(),
        [z](std::size_t offset, std::size_t bytes, unsigned char* out) { contents(z, offset, bytes, out); },
        [layout, lead, size, end](std::size_t offset) -> int64_t {
            if (offset < lead || offset >= end) return -1;
            int64_t row = 0, col = 0;
            return row_col(layout, static_cast<int64_t>((offset - lead) / size), row, col) ? row : -1;
        },
        std::move(targets));
    return true;
}

bool rows(const DeviceTensor& t, RowsFor why, std::vector<int64_t>& out) {
    if (!g_open) return false;
    const Lazy* z = find(t);
    if (!z) return false;
    out.clear();
    std::vector<int64_t> touched;
    for (const auto& [lo, hi] : emu::touched_ranges(t.base())) rows_meeting(t, lo, hi, touched);
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    if (why == RowsFor::unchanged) {
        out = touched;
    } else {
        // The rows the sample wrote into, and the rows it had to write (unwritten ones fail).
        std::vector<unsigned char> scratch;
        for (int64_t r : touched) {
            const auto [lo, hi] = row_bytes(t, r, false);
            emu::materialize(t.base() + lo, hi - lo);
            if (row_changed(*z, r, scratch)) out.push_back(r);
        }
        for (int64_t r : target_rows(t.layout(), static_cast<uint64_t>(z - g_lazy.data()) + 1)) out.push_back(r);
        std::sort(out.begin(), out.end());
        out.erase(std::unique(out.begin(), out.end()), out.end());
    }
    for (int64_t r : out) {
        const auto [lo, hi] = row_bytes(t, r, false);
        emu::materialize(t.base() + lo, hi - lo);
    }
    return true;
}

}  // namespace

void install_sampling() {
    SamplingHooks& h = sampling_hooks();
    h.begin_call = begin_call;
    h.end_call = end_call;
    h.lazy_contents = lazy_contents;
    h.rows = rows;
}

void set_profiling(bool on) { g_profiling = on; }

void sample_if_large(Case& c) {
    if (c.elements <= kSampledRepeatElements) return;
    const int64_t elements = c.elements;
    const bool large = elements > kSampledElements;
    if (large)
        c.what += " (on the CPU emulator: its launches run the blocks that write its first, middle and last rows "
                  "and a sample drawn from the seed, and the rows they write are checked)";
    c.run = [run = std::move(c.run), elements, large](uint64_t seed, int rep) {
        struct Running {
            Running(RunningCase c) { g_case = c; }
            ~Running() { g_case = RunningCase{}; }
        } running(RunningCase{large || rep > 0, rep > 0, elements, seed});
        try {
            return run(seed, rep);
        } catch (const RepeatLeftOut&) {
            return CaseOutcome::pass();
        }
    };
}

}  // namespace workbook::emulated
