/*
 * straggler.h: the pace of a synchronous job whose GPUs are not equally
 * fast.
 *
 * GPUs of one model do not sustain the same clock: the silicon lottery
 * (each die's own voltage-frequency-temperature curve) and uneven cooling
 * spread their matmul throughput by 5 % and more across the eight GPUs of
 * one node (stas00/ml-engineering, compute/accelerator/README.md, "Not all
 * accelerators are created equal": "I have seen 5% and higher differences
 * on an 8-gpu node"; "5%+ MAMF spread between GPUs").  Every FSDP, HSDP or
 * DDP collective needs all ranks, so a step goes at its slowest GPU's
 * compute pace.  The model takes the GPUs' sustained speeds as independent
 * normal draws; SPREAD is the expected range (fastest minus slowest, a
 * fraction of a typical GPU's speed) among 8 of them, which fixes their
 * standard deviation: sigma = SPREAD / E[range of 8] = SPREAD / (2 e(8)),
 * e(n) being the expected largest of n standard normals.  The slowest of
 * WORLD GPUs runs at 1 - sigma e(WORLD) of a typical one.  Only the SM
 * clock differs: memory-bound kernels, which HBM's own clock paces, do
 * not (kernel_cost.c applies it to the compute peaks).
 */
#ifndef FSDPSIM_STRAGGLER_H
#define FSDPSIM_STRAGGLER_H

/* The expected largest of N independent standard normal draws (0 for
 * N = 1; 1.4236 for 8; 2.6 for 128). */
double straggler_expected_max(int n);

/* The slowest of WORLD GPUs' speed over a typical one's, for a range of
 * SPREAD among 8 (1 when WORLD is 1 or SPREAD 0). */
double straggler_speed(double spread, int world);

#endif
