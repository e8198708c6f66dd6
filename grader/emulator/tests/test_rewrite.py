"""The source rewrite keeps every line where it was and turns CUDA syntax into C++ calls."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import emu_rewrite  # noqa: E402


class RewriteTest(unittest.TestCase):
    def test_launch_with_template_kernel(self):
        src = "k<T, 4><<<grid, 256, 0, stream>>>(a, b);"
        out = emu_rewrite.rewrite(src)
        self.assertEqual(out, "::emu::TripleChevron(EMU_LAUNCH_MODE, grid, 256, 0, stream)("
                              "[=](auto&&... emu_a) { k<T, 4>(emu_a...); }, a, b);")

    def test_launch_without_arguments(self):
        out = emu_rewrite.rewrite("ns::k<<<1, 32>>>();")
        self.assertEqual(out, "::emu::TripleChevron(EMU_LAUNCH_MODE, 1, 32)([=](auto&&... emu_a) { ns::k(emu_a...); });")

    def test_launch_spanning_lines_keeps_line_count(self):
        src = "k<<<blocks,\n    threads>>>(x,\n y);\nint after;"
        out = emu_rewrite.rewrite(src)
        self.assertEqual(out.count("\n"), src.count("\n"))
        self.assertTrue(out.endswith("int after;"))

    def test_static_shared_array(self):
        out = emu_rewrite.rewrite("__shared__ float partials[2][N / 32];")
        self.assertIn("float (&partials)[2][N/32] = *static_cast<float(*)[2][N/32]>", out)
        self.assertIn("sizeof(float[2][N/32])", out)
        self.assertIn('"partials", sizeof(float), 2)', out)  # a report names the array and its element

    def test_shared_struct_and_alignment(self):
        out = emu_rewrite.rewrite("__shared__ __align__(16) typename R::TempStorage temp;")
        self.assertIn("typename R::TempStorage (&temp) =", out)
        self.assertIn("(16)", out)

    def test_extern_shared(self):
        out = emu_rewrite.rewrite("extern __shared__ __align__(16) unsigned char smem[];")
        self.assertEqual(out, 'unsigned char* const smem = static_cast<unsigned char*>(::emu::dynamic_shared("smem", '
                              'sizeof(unsigned char)));')

    def test_comments_and_strings_are_left_alone(self):
        src = '// k<<<1, 1>>>(x); __shared__ float a[2];\nconst char* s = "__shared__ x;";'
        self.assertEqual(emu_rewrite.rewrite(src), src)

    def test_pdl_wait_and_register_pins(self):
        src = 'asm volatile("griddepcontrol.wait;" ::: "memory");\nasm volatile("" : "+r"(w));'
        out = emu_rewrite.rewrite(src)
        self.assertEqual(out, "::emu::grid_dependency_wait();\n(void)0;")

    def test_a_prefetch_hint_vanishes_a_bulk_one_is_checked(self):
        # A bulk prefetch moves nothing, but its address, size and range must be valid on the GPU.
        src = ('asm volatile("prefetch.global.L2 [%0];" ::"l"(p));\n'
               'asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p + k), "r"(n * 16) : "memory");')
        self.assertEqual(emu_rewrite.rewrite(src), "(void)0;\n::emu::bulk_prefetch_l2(p + k, n * 16);")

    def test_operands_after_a_double_colon_are_inputs(self):
        src = 'asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" : : "l"(::q), "r"(m));'
        self.assertEqual(emu_rewrite.rewrite(src), "::emu::bulk_prefetch_l2(::q, m);")

    def test_unknown_ptx_is_a_compile_error_naming_it(self):
        out = emu_rewrite.rewrite('asm volatile("bar.sync 1;");')
        self.assertIn("static_assert", out)
        self.assertIn("bar.sync 1;", out)

    def test_an_l2_policy_and_a_load_that_carries_it(self):
        src = ('asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));\n'
               'asm volatile("ld.global.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"\n'
               '             : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p + i), "l"(pol));')
        out = emu_rewrite.rewrite(src)
        self.assertEqual(out.count("\n"), src.count("\n"))
        self.assertEqual(out.splitlines()[0], "(pol) = 0ull;")
        self.assertEqual(out.splitlines()[1], "::emu::cache_hinted_load(p + i, v.x, v.y, v.z, v.w)")

    def test_ptx_with_a_double_colon_is_not_taken_for_a_register_pin(self):
        # "::" inside the template once ended it early, and the statement vanished silently.
        out = emu_rewrite.rewrite('asm volatile("ld.global.L1::no_allocate.u32 %0, [%1];" : "=r"(a) : "l"(q));')
        self.assertIn("static_assert", out)
        self.assertIn("L1::no_allocate", out)

    def test_a_policy_load_of_the_wrong_width_is_refused(self):
        with self.assertRaises(emu_rewrite.RewriteError):
            emu_rewrite.rewrite('asm("ld.global.L2::cache_hint.v4.u32 {%0,%1}, [%2], %3;" : "=r"(a), "=r"(b) : "l"(p), "l"(q));')

    def test_cuda_arch_is_the_device_passes_inside_device_code_only(self):
        src = ("__global__ void k(int* p) {\n#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900\n  p[0] = 1;\n#endif\n}\n"
               "__device__ int f() { return __CUDA_ARCH__; }\n"
               "#ifdef __CUDA_ARCH__\n#endif\n"
               "void host() { /* __CUDA_ARCH__ */ }\n__device__ int counter = 0;\n")
        out = emu_rewrite.rewrite(src)
        self.assertEqual(out.count("\n"), src.count("\n"))
        lines = out.splitlines()
        self.assertEqual(lines[1], "#if defined(EMU_DEVICE_CUDA_ARCH) && EMU_DEVICE_CUDA_ARCH >= 900")
        self.assertEqual(lines[5], "__device__ int f() { return EMU_DEVICE_CUDA_ARCH; }")
        self.assertEqual(lines[6], "#ifdef __CUDA_ARCH__")  # host code: the host pass's view
        self.assertEqual(lines[8], "void host() { /* __CUDA_ARCH__ */ }")

    def test_cluster_dims_move_into_the_kernel_body(self):
        src = "__global__ void __cluster_dims__(2, 1,\n 1) k(int* p) {\n  p[0] = 1;\n}"
        out = emu_rewrite.rewrite(src)
        self.assertEqual(out.count("\n"), src.count("\n"))
        self.assertNotIn("__cluster_dims__", out)
        self.assertIn("k(int* p) { ::emu::kernel_cluster_dims(2, 1, 1);", out)

    def test_noinline_qualifier_becomes_a_gcc_attribute(self):
        src = "__device__ __noinline__ int f(int v) { return v; }\nint g() __attribute__((__noinline__));"
        out = emu_rewrite.rewrite(src)
        self.assertIn("__device__ __attribute__((noinline)) int f", out)
        self.assertIn("__attribute__((__noinline__))", out)  # already an attribute: left alone
        self.assertEqual(out.count("\n"), src.count("\n"))

    def test_cluster_dims_on_a_declaration_are_refused(self):
        with self.assertRaises(emu_rewrite.RewriteError):
            emu_rewrite.rewrite("__global__ void __cluster_dims__(2) k(int* p);")

    def test_two_declarators_are_refused(self):
        with self.assertRaises(emu_rewrite.RewriteError):
            emu_rewrite.rewrite("__shared__ float a[2], b[2];")


if __name__ == "__main__":
    unittest.main()
