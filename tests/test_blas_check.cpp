// The BLAS check: which library LibTorch's GEMMs run on and how it threads, and the warnings
// plumb prints for the two set-ups that distort every measurement.
#include <gtest/gtest.h>

#include "plumb/platform/blas_check.h"

namespace plumb::platform {
namespace {

TEST(BlasCheck, NamesOpenBlasThreadingModels) {
  EXPECT_EQ(openblas_threading_name(0), "sequential");
  EXPECT_EQ(openblas_threading_name(1), "pthreads");
  EXPECT_EQ(openblas_threading_name(2), "openmp");
  EXPECT_EQ(openblas_threading_name(7), "unknown");
}

TEST(BlasCheck, ReferenceBlasIsWarnedAboutWithTheFix) {
  BlasInfo reference{"/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0", false, "", "", ""};
  const std::string w = blas_warning(reference);
  EXPECT_NE(w.find("not an optimized BLAS"), std::string::npos) << w;
  EXPECT_NE(w.find("libopenblas0-openmp"), std::string::npos) << w;
  EXPECT_NE(blas_environment_warning(reference).find("reference BLAS"), std::string::npos);
}

TEST(BlasCheck, PthreadsOpenBlasIsWarnedAboutWithTheFix) {
  BlasInfo pthreads{"/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3", true, "pthreads", "",
                    ""};
  const std::string w = blas_warning(pthreads);
  EXPECT_NE(w.find("pthreads build"), std::string::npos) << w;
  EXPECT_NE(w.find("libopenblas0-openmp"), std::string::npos) << w;
  EXPECT_NE(blas_environment_warning(pthreads).find("compete"), std::string::npos);
}

TEST(BlasCheck, OpenMpAndSequentialOpenBlasAreQuiet) {
  for (const char* threading : {"openmp", "sequential", ""}) {
    BlasInfo ok{"/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3", true, threading, "", ""};
    EXPECT_EQ(blas_warning(ok), "") << threading;
    EXPECT_EQ(blas_environment_warning(ok), "") << threading;
  }
}

// OpenBLAS's pre-AVX fallback kernels on a CPU with AVX2+FMA or AVX-512 get the kernel set
// those units run; OpenBLAS's own choice of an AVX kernel set, or a CPU without AVX2, is left
// alone.
TEST(BlasCheck, PreAvxOpenBlasKernelsGetTheOnesTheCpuRuns) {
  CpuFeatures avx512;
  avx512.avx = avx512.avx2 = avx512.fma = avx512.avx512f = avx512.avx512bw = avx512.avx512vl = true;
  CpuFeatures avx2;
  avx2.avx = avx2.avx2 = avx2.fma = true;
  CpuFeatures sse;
  sse.sse2 = true;
  CpuFeatures avx512_without_bw = avx2;  // Knights Landing: AVX-512 F without BW/VL
  avx512_without_bw.avx512f = true;
  EXPECT_EQ(openblas_core_for("Prescott", avx512), "SkylakeX");
  EXPECT_EQ(openblas_core_for("Nehalem", avx512), "SkylakeX");
  EXPECT_EQ(openblas_core_for("Prescott", avx2), "Haswell");
  EXPECT_EQ(openblas_core_for("Prescott", avx512_without_bw), "Haswell");
  EXPECT_EQ(openblas_core_for("Prescott", sse), "");
  EXPECT_EQ(openblas_core_for("Zen", avx512), "");  // OpenBLAS's own choice
  EXPECT_EQ(openblas_core_for("Haswell", avx512), "");
  EXPECT_EQ(openblas_core_for("SkylakeX", avx512), "");
  EXPECT_EQ(openblas_core_for("", avx512), "");  // not OpenBLAS
}

TEST(BlasCheck, PreAvxKernelsAreWarnedAboutAndRecorded) {
  BlasInfo generic{"/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3", true, "openmp",
                   "Prescott", "SkylakeX"};
  const std::string w = blas_warning(generic);
  EXPECT_NE(w.find("pre-AVX kernels (Prescott)"), std::string::npos) << w;
  EXPECT_NE(w.find("OPENBLAS_CORETYPE"), std::string::npos) << w;
  EXPECT_NE(blas_environment_warning(generic).find("SkylakeX"), std::string::npos);
  EXPECT_EQ(blas_description(generic),
            "/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3 (OpenBLAS kernels: Prescott)");
  BlasInfo reference{"/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0", false, "", "", ""};
  EXPECT_EQ(blas_description(reference), reference.library);
}

// A tuned BLAS is known by its library's name; LibTorch itself counts only when it was built
// with MKL linked in (PyTorch's wheels), never the reference BLAS.
TEST(BlasCheck, RecognisesTunedLibrariesAndMklInsideLibTorch) {
  EXPECT_TRUE(is_optimized_blas("/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3", false));
  EXPECT_TRUE(is_optimized_blas("/opt/intel/oneapi/mkl/lib/libmkl_rt.so.2", false));
  EXPECT_FALSE(is_optimized_blas("/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0", false));
  EXPECT_FALSE(is_optimized_blas("/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0", true));
  EXPECT_TRUE(is_optimized_blas("/venv/site-packages/torch/lib/libtorch_cpu.so", true));
  EXPECT_FALSE(is_optimized_blas("/venv/site-packages/torch/lib/libtorch_cpu.so", false));
}

// scripts/setup.sh points Debian's alternatives at OpenBLAS's OpenMP build; this process runs
// on what it set up. (A machine on another optimized BLAS, e.g. MKL, has nothing to check.)
TEST(BlasCheck, ThisProcessRunsOnAnOptimizedBlasThatSharesLibTorchsThreads) {
  const BlasInfo here = detect_blas();
  EXPECT_TRUE(here.optimized) << here.library;
  if (here.library.find("openblas") != std::string::npos) {
    EXPECT_EQ(here.threading, "openmp") << here.library;
  }
}

}  // namespace
}  // namespace plumb::platform
