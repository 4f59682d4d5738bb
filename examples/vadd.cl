// An OpenCL kernel for AMD GPUs, compiled for amdgcn with the ROCm device libraries (ocml) and
// linked into a code object. Launch with 256 work-items per group.
float __ocml_fma_f32(float, float, float);

__kernel void vadd(__global const float* a, __global const float* b, __global float* c) {
  int i = __builtin_amdgcn_workgroup_id_x() * 256 + __builtin_amdgcn_workitem_id_x();
  c[i] = __ocml_fma_f32(a[i], 1.0f, b[i]);
}
