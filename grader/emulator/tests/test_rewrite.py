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

    def test_shared_struct_and_alignment(self):
        out = emu_rewrite.rewrite("__shared__ __align__(16) typename R::TempStorage temp;")
        self.assertIn("typename R::TempStorage (&temp) =", out)
        self.assertIn("(16)", out)

    def test_extern_shared(self):
        out = emu_rewrite.rewrite("extern __shared__ __align__(16) unsigned char smem[];")
        self.assertEqual(out, "unsigned char* const smem = static_cast<unsigned char*>(::emu::dynamic_shared());")

    def test_comments_and_strings_are_left_alone(self):
        src = '// k<<<1, 1>>>(x); __shared__ float a[2];\nconst char* s = "__shared__ x;";'
        self.assertEqual(emu_rewrite.rewrite(src), src)

    def test_pdl_wait_and_register_pins(self):
        src = 'asm volatile("griddepcontrol.wait;" ::: "memory");\nasm volatile("" : "+r"(w));'
        out = emu_rewrite.rewrite(src)
        self.assertEqual(out, "::emu::grid_dependency_wait();\n(void)0;")

    def test_unknown_ptx_is_a_compile_error_naming_it(self):
        out = emu_rewrite.rewrite('asm volatile("bar.sync 1;");')
        self.assertIn("static_assert", out)
        self.assertIn("bar.sync 1;", out)

    def test_two_declarators_are_refused(self):
        with self.assertRaises(emu_rewrite.RewriteError):
            emu_rewrite.rewrite("__shared__ float a[2], b[2];")


if __name__ == "__main__":
    unittest.main()
