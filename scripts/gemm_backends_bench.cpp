// GEMM backends side by side, one thread: OpenBLAS cblas_sgemm against oneDNN dnnl_sgemm (f32) and
// dnnl_gemm_s8s8s32 / u8s8s32 (int8), in GFLOP/s (best of 5 timings), on the shapes moe gives them: decoding
// (m = beam x sentences: 5, 40, 200 rows; n = d, FFN, 3d, vocabulary) and training (m = 2048 tokens, weight
// gradients transposed). The measurement behind ops/cpu_gemm.h's default (docs/PERF.md); a measurement, so no
// test covers it (tests/ops/cpu_gemm_test.cpp checks the backends agree). Not part of the build:
//   g++ -O2 -std=c++17 scripts/gemm_backends_bench.cpp -I/usr/include/x86_64-linux-gnu/openblas-pthread \
//       -lopenblas -ldnnl -o /tmp/gemm_backends_bench && OMP_NUM_THREADS=1 /tmp/gemm_backends_bench
#include <oneapi/dnnl/dnnl.h>
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>
extern "C" void openblas_set_num_threads(int);
int main(){
  openblas_set_num_threads(1);
  struct S{int m,n,k; bool ta,tb;};
  std::vector<S> shapes={{5,128,128,0,0},{5,512,128,0,0},{5,8000,128,0,0},{40,128,128,0,0},{40,512,128,0,0},{40,384,128,0,0},{40,8000,128,0,0},
    {200,512,512,0,0},{200,2048,512,0,0},{200,32000,512,0,0},
    {2048,512,128,0,0},{2048,128,512,0,0},{128,512,2048,1,0},{2048,128,512,0,1},{2048,8000,128,0,1},{128,8000,2048,1,0}};
  for(auto s:shapes){
    std::vector<float> a(size_t(s.m)*s.k,0.5f),b(size_t(s.k)*s.n,0.25f),c(size_t(s.m)*s.n);
    int lda=s.ta?s.m:s.k, ldb=s.tb?s.k:s.n;
    double flops=2.0*s.m*s.n*s.k; int reps=std::max(3,int(2e9/flops));
    auto t=[&](auto f){double best=1e9; for(int r=0;r<5;r++){auto t0=std::chrono::steady_clock::now(); for(int i=0;i<reps;i++)f(); best=std::min(best,std::chrono::duration<double>(std::chrono::steady_clock::now()-t0).count()/reps);} return flops/best/1e9;};
    double ob=t([&]{cblas_sgemm(CblasRowMajor,s.ta?CblasTrans:CblasNoTrans,s.tb?CblasTrans:CblasNoTrans,s.m,s.n,s.k,1.f,a.data(),lda,b.data(),ldb,0.f,c.data(),s.n);});
    double dn=t([&]{dnnl_sgemm(s.ta?'T':'N',s.tb?'T':'N',s.m,s.n,s.k,1.f,a.data(),lda,b.data(),ldb,0.f,c.data(),s.n);});
    std::vector<int8_t> a8(a.size(),3),b8(b.size(),-2); std::vector<int32_t> c32(c.size()); int32_t co=0;
    double s8=t([&]{dnnl_gemm_s8s8s32(s.ta?'T':'N',s.tb?'T':'N','F',s.m,s.n,s.k,1.f,a8.data(),lda,0,b8.data(),ldb,0,0.f,c32.data(),s.n,&co);});
    std::vector<uint8_t> u8(a.size(),3);
    double us8=t([&]{dnnl_gemm_u8s8s32(s.ta?'T':'N',s.tb?'T':'N','F',s.m,s.n,s.k,1.f,u8.data(),lda,0,b8.data(),ldb,0,0.f,c32.data(),s.n,&co);});
    printf("m %5d n %5d k %5d %c%c  openblas %6.1f  dnnl %6.1f  s8s8 %6.1f u8s8 %6.1f GFLOP/s\n",s.m,s.n,s.k,s.ta?'T':'N',s.tb?'T':'N',ob,dn,s8,us8);
  }
}
