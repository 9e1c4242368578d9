// nvcc's half of ptx_hopper.cuh's wgmma: wgmma.mma_async.sync.aligned.m64nNk16.f32.{bf16,f16} for every N
// (a multiple of 8 up to 256), A from shared memory (ss) or registers (rs), as inline PTX. An asm
// statement names each of the N / 2 accumulator registers, so the operand lists are spelled out: for
// N = 8J, MOE_WG_D<J> holds the accumulators' place holders %0 .. %(4J-1), MOE_WG_O<J>(d) their operands
// and MOE_WG_I<J> the place holders of the seven operands that may follow them. Included for nvcc's
// sm_90a pass only (ptx_hopper.cuh); scripts/internal/kernel-sass.sh finds the HGMMA instructions it makes.
// Covered by tests/gpu/ptx_instructions_parity_test.cpp on a GPU.
#pragma once
#include <cstdint>

#define MOE_WG_D1 "%0, %1, %2, %3"
#define MOE_WG_D2 MOE_WG_D1 ", %4, %5, %6, %7"
#define MOE_WG_D3 MOE_WG_D2 ", %8, %9, %10, %11"
#define MOE_WG_D4 MOE_WG_D3 ", %12, %13, %14, %15"
#define MOE_WG_D5 MOE_WG_D4 ", %16, %17, %18, %19"
#define MOE_WG_D6 MOE_WG_D5 ", %20, %21, %22, %23"
#define MOE_WG_D7 MOE_WG_D6 ", %24, %25, %26, %27"
#define MOE_WG_D8 MOE_WG_D7 ", %28, %29, %30, %31"
#define MOE_WG_D9 MOE_WG_D8 ", %32, %33, %34, %35"
#define MOE_WG_D10 MOE_WG_D9 ", %36, %37, %38, %39"
#define MOE_WG_D11 MOE_WG_D10 ", %40, %41, %42, %43"
#define MOE_WG_D12 MOE_WG_D11 ", %44, %45, %46, %47"
#define MOE_WG_D13 MOE_WG_D12 ", %48, %49, %50, %51"
#define MOE_WG_D14 MOE_WG_D13 ", %52, %53, %54, %55"
#define MOE_WG_D15 MOE_WG_D14 ", %56, %57, %58, %59"
#define MOE_WG_D16 MOE_WG_D15 ", %60, %61, %62, %63"
#define MOE_WG_D17 MOE_WG_D16 ", %64, %65, %66, %67"
#define MOE_WG_D18 MOE_WG_D17 ", %68, %69, %70, %71"
#define MOE_WG_D19 MOE_WG_D18 ", %72, %73, %74, %75"
#define MOE_WG_D20 MOE_WG_D19 ", %76, %77, %78, %79"
#define MOE_WG_D21 MOE_WG_D20 ", %80, %81, %82, %83"
#define MOE_WG_D22 MOE_WG_D21 ", %84, %85, %86, %87"
#define MOE_WG_D23 MOE_WG_D22 ", %88, %89, %90, %91"
#define MOE_WG_D24 MOE_WG_D23 ", %92, %93, %94, %95"
#define MOE_WG_D25 MOE_WG_D24 ", %96, %97, %98, %99"
#define MOE_WG_D26 MOE_WG_D25 ", %100, %101, %102, %103"
#define MOE_WG_D27 MOE_WG_D26 ", %104, %105, %106, %107"
#define MOE_WG_D28 MOE_WG_D27 ", %108, %109, %110, %111"
#define MOE_WG_D29 MOE_WG_D28 ", %112, %113, %114, %115"
#define MOE_WG_D30 MOE_WG_D29 ", %116, %117, %118, %119"
#define MOE_WG_D31 MOE_WG_D30 ", %120, %121, %122, %123"
#define MOE_WG_D32 MOE_WG_D31 ", %124, %125, %126, %127"
#define MOE_WG_O1(d) "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
#define MOE_WG_O2(d) MOE_WG_O1(d), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
#define MOE_WG_O3(d) MOE_WG_O2(d), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11])
#define MOE_WG_O4(d) MOE_WG_O3(d), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
#define MOE_WG_O5(d) MOE_WG_O4(d), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19])
#define MOE_WG_O6(d) MOE_WG_O5(d), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23])
#define MOE_WG_O7(d) MOE_WG_O6(d), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27])
#define MOE_WG_O8(d) MOE_WG_O7(d), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define MOE_WG_O9(d) MOE_WG_O8(d), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35])
#define MOE_WG_O10(d) MOE_WG_O9(d), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39])
#define MOE_WG_O11(d) MOE_WG_O10(d), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43])
#define MOE_WG_O12(d) MOE_WG_O11(d), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
#define MOE_WG_O13(d) MOE_WG_O12(d), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51])
#define MOE_WG_O14(d) MOE_WG_O13(d), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55])
#define MOE_WG_O15(d) MOE_WG_O14(d), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59])
#define MOE_WG_O16(d) MOE_WG_O15(d), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define MOE_WG_O17(d) MOE_WG_O16(d), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67])
#define MOE_WG_O18(d) MOE_WG_O17(d), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71])
#define MOE_WG_O19(d) MOE_WG_O18(d), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75])
#define MOE_WG_O20(d) MOE_WG_O19(d), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79])
#define MOE_WG_O21(d) MOE_WG_O20(d), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83])
#define MOE_WG_O22(d) MOE_WG_O21(d), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
#define MOE_WG_O23(d) MOE_WG_O22(d), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91])
#define MOE_WG_O24(d) MOE_WG_O23(d), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
#define MOE_WG_O25(d) MOE_WG_O24(d), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99])
#define MOE_WG_O26(d) MOE_WG_O25(d), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103])
#define MOE_WG_O27(d) MOE_WG_O26(d), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107])
#define MOE_WG_O28(d) MOE_WG_O27(d), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111])
#define MOE_WG_O29(d) MOE_WG_O28(d), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115])
#define MOE_WG_O30(d) MOE_WG_O29(d), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119])
#define MOE_WG_O31(d) MOE_WG_O30(d), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123])
#define MOE_WG_O32(d) MOE_WG_O31(d), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
#define MOE_WG_I1 ("%4", "%5", "%6", "%7", "%8", "%9", "%10")
#define MOE_WG_I2 ("%8", "%9", "%10", "%11", "%12", "%13", "%14")
#define MOE_WG_I3 ("%12", "%13", "%14", "%15", "%16", "%17", "%18")
#define MOE_WG_I4 ("%16", "%17", "%18", "%19", "%20", "%21", "%22")
#define MOE_WG_I5 ("%20", "%21", "%22", "%23", "%24", "%25", "%26")
#define MOE_WG_I6 ("%24", "%25", "%26", "%27", "%28", "%29", "%30")
#define MOE_WG_I7 ("%28", "%29", "%30", "%31", "%32", "%33", "%34")
#define MOE_WG_I8 ("%32", "%33", "%34", "%35", "%36", "%37", "%38")
#define MOE_WG_I9 ("%36", "%37", "%38", "%39", "%40", "%41", "%42")
#define MOE_WG_I10 ("%40", "%41", "%42", "%43", "%44", "%45", "%46")
#define MOE_WG_I11 ("%44", "%45", "%46", "%47", "%48", "%49", "%50")
#define MOE_WG_I12 ("%48", "%49", "%50", "%51", "%52", "%53", "%54")
#define MOE_WG_I13 ("%52", "%53", "%54", "%55", "%56", "%57", "%58")
#define MOE_WG_I14 ("%56", "%57", "%58", "%59", "%60", "%61", "%62")
#define MOE_WG_I15 ("%60", "%61", "%62", "%63", "%64", "%65", "%66")
#define MOE_WG_I16 ("%64", "%65", "%66", "%67", "%68", "%69", "%70")
#define MOE_WG_I17 ("%68", "%69", "%70", "%71", "%72", "%73", "%74")
#define MOE_WG_I18 ("%72", "%73", "%74", "%75", "%76", "%77", "%78")
#define MOE_WG_I19 ("%76", "%77", "%78", "%79", "%80", "%81", "%82")
#define MOE_WG_I20 ("%80", "%81", "%82", "%83", "%84", "%85", "%86")
#define MOE_WG_I21 ("%84", "%85", "%86", "%87", "%88", "%89", "%90")
#define MOE_WG_I22 ("%88", "%89", "%90", "%91", "%92", "%93", "%94")
#define MOE_WG_I23 ("%92", "%93", "%94", "%95", "%96", "%97", "%98")
#define MOE_WG_I24 ("%96", "%97", "%98", "%99", "%100", "%101", "%102")
#define MOE_WG_I25 ("%100", "%101", "%102", "%103", "%104", "%105", "%106")
#define MOE_WG_I26 ("%104", "%105", "%106", "%107", "%108", "%109", "%110")
#define MOE_WG_I27 ("%108", "%109", "%110", "%111", "%112", "%113", "%114")
#define MOE_WG_I28 ("%112", "%113", "%114", "%115", "%116", "%117", "%118")
#define MOE_WG_I29 ("%116", "%117", "%118", "%119", "%120", "%121", "%122")
#define MOE_WG_I30 ("%120", "%121", "%122", "%123", "%124", "%125", "%126")
#define MOE_WG_I31 ("%124", "%125", "%126", "%127", "%128", "%129", "%130")
#define MOE_WG_I32 ("%128", "%129", "%130", "%131", "%132", "%133", "%134")

namespace moe::cuda::ptx::detail {

// The instruction texts; the operand numbers after the accumulators come from MOE_WG_I<J>.
#define MOE_WG_SS_TEXT(TYPE, N, D, a, b, scale, ta, tb, unused5, unused6)                                   \
  "{\n.reg .pred p;\nsetp.ne.b32 p, " scale ", 0;\nwgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TYPE "." \
  TYPE " {" D "}, " a ", " b ", p, 1, 1, " ta ", " tb ";\n}\n"
#define MOE_WG_RS_TEXT(TYPE, N, D, a0, a1, a2, a3, b, scale, tb)                                            \
  "{\n.reg .pred p;\nsetp.ne.b32 p, " scale ", 0;\nwgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TYPE "." \
  TYPE " {" D "}, {" a0 ", " a1 ", " a2 ", " a3 "}, " b ", p, 1, 1, " tb ";\n}\n"
#define MOE_WG_CALL(F, ...) MOE_WG_CALL_(F, __VA_ARGS__)
#define MOE_WG_CALL_(F, ...) F(__VA_ARGS__)
#define MOE_WG_UNPACK(...) __VA_ARGS__

template <int N>
struct Wgmma;

#define MOE_WGMMA_SHAPE(J, N)                                                                                    \
  template <>                                                                                                    \
  struct Wgmma<N> {                                                                                              \
    template <bool Bf16, int TransA, int TransB>                                                                 \
    __device__ static void ss(float* d, uint64_t a, uint64_t b, int scale) {                                     \
      if constexpr (Bf16)                                                                                        \
        asm volatile(MOE_WG_CALL(MOE_WG_SS_TEXT, "bf16", N, MOE_WG_D##J, MOE_WG_UNPACK MOE_WG_I##J)               \
                     : MOE_WG_O##J(d) : "l"(a), "l"(b), "r"(scale), "n"(TransA), "n"(TransB));                   \
      else                                                                                                       \
        asm volatile(MOE_WG_CALL(MOE_WG_SS_TEXT, "f16", N, MOE_WG_D##J, MOE_WG_UNPACK MOE_WG_I##J)                \
                     : MOE_WG_O##J(d) : "l"(a), "l"(b), "r"(scale), "n"(TransA), "n"(TransB));                   \
    }                                                                                                            \
    template <bool Bf16, int TransB>                                                                             \
    __device__ static void rs(float* d, const uint32_t* a, uint64_t b, int scale) {                              \
      if constexpr (Bf16)                                                                                        \
        asm volatile(MOE_WG_CALL(MOE_WG_RS_TEXT, "bf16", N, MOE_WG_D##J, MOE_WG_UNPACK MOE_WG_I##J)               \
                     : MOE_WG_O##J(d) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale), "n"(TransB)); \
      else                                                                                                       \
        asm volatile(MOE_WG_CALL(MOE_WG_RS_TEXT, "f16", N, MOE_WG_D##J, MOE_WG_UNPACK MOE_WG_I##J)                \
                     : MOE_WG_O##J(d) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale), "n"(TransB)); \
    }                                                                                                            \
  };

MOE_WGMMA_SHAPE(1, 8)
MOE_WGMMA_SHAPE(2, 16)
MOE_WGMMA_SHAPE(3, 24)
MOE_WGMMA_SHAPE(4, 32)
MOE_WGMMA_SHAPE(5, 40)
MOE_WGMMA_SHAPE(6, 48)
MOE_WGMMA_SHAPE(7, 56)
MOE_WGMMA_SHAPE(8, 64)
MOE_WGMMA_SHAPE(9, 72)
MOE_WGMMA_SHAPE(10, 80)
MOE_WGMMA_SHAPE(11, 88)
MOE_WGMMA_SHAPE(12, 96)
MOE_WGMMA_SHAPE(13, 104)
MOE_WGMMA_SHAPE(14, 112)
MOE_WGMMA_SHAPE(15, 120)
MOE_WGMMA_SHAPE(16, 128)
MOE_WGMMA_SHAPE(17, 136)
MOE_WGMMA_SHAPE(18, 144)
MOE_WGMMA_SHAPE(19, 152)
MOE_WGMMA_SHAPE(20, 160)
MOE_WGMMA_SHAPE(21, 168)
MOE_WGMMA_SHAPE(22, 176)
MOE_WGMMA_SHAPE(23, 184)
MOE_WGMMA_SHAPE(24, 192)
MOE_WGMMA_SHAPE(25, 200)
MOE_WGMMA_SHAPE(26, 208)
MOE_WGMMA_SHAPE(27, 216)
MOE_WGMMA_SHAPE(28, 224)
MOE_WGMMA_SHAPE(29, 232)
MOE_WGMMA_SHAPE(30, 240)
MOE_WGMMA_SHAPE(31, 248)
MOE_WGMMA_SHAPE(32, 256)

}  // namespace moe::cuda::ptx::detail
