// CUDA emulator (emu/README.md): the data-type enumeration of CUDA's library_types.h (values as CUDA's).
#pragma once

typedef enum cudaDataType_t {
  CUDA_R_16F = 2,
  CUDA_R_32F = 0,
  CUDA_R_64F = 1,
  CUDA_R_16BF = 14,
  CUDA_R_32I = 10,
  CUDA_R_8I = 3,
} cudaDataType_t;
typedef cudaDataType_t cudaDataType;
