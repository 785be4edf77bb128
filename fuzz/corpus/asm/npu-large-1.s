mov pop=vector push=load src_space=l1 src_addr=16384 dst_space=l1 dst_addr=8318720 elem_bytes=2 n0=16 n1=33 n2=33 src_s0=1 src_s1=16 src_s2=512 dst_s0=1 dst_s1=16 dst_s2=528 pad1_lo=1 pad2_lo=1
mov src_space=l1 src_addr=8318720 dst_space=l0a dst_addr=376832 elem_bytes=2 n0=48 n1=16 n2=16 src_s0=1 src_s1=32 src_s2=1056 dst_s0=1 dst_s1=144 dst_s2=2304
mov src_space=l1 src_addr=8319776 dst_space=l0a dst_addr=376928 elem_bytes=2 n0=48 n1=16 n2=16 src_s0=1 src_s1=32 src_s2=1056 dst_s0=1 dst_s1=144 dst_s2=2304
mov src_space=l1 src_addr=8320832 dst_space=l0a dst_addr=377024 elem_bytes=2 n0=48 n1=16 n2=16 src_s0=1 src_s1=32 src_s2=1056 dst_s0=1 dst_s1=144 dst_s2=2304
mov pop=load push=tensor src_space=l1 src_addr=8300288 dst_space=l0b dst_addr=505856 elem_bytes=2 n0=32 n1=144 n2=1 src_s0=1 src_s1=32 dst_s0=1 dst_s1=32
mm pop=feed push=vector a_addr=376832 b_addr=505856 c_addr=983040 m=256 k=144 n=32
vop pop=load|tensor push=load op=add dst_space=acc dst_addr=983040 dst_dtype=fp32 src1_space=acc src1_addr=983040 src1_dtype=fp32 src2_space=l1 src2_addr=8388480 src2_dtype=fp32 n0=32 n1=256 n2=1 dst_s0=1 dst_s1=32 src1_s0=1 src1_s1=32 src2_s0=1
vop push=feed op=relu dst_space=l1 src1_space=acc src1_addr=983040 src1_dtype=fp32 n0=32 n1=256 n2=1 dst_s0=1 dst_s1=32 src1_s0=1 src1_s1=32
ld pop=feed push=vector src_addr=16512 dst_space=l1 dst_addr=32768 elem_bytes=2 n0=64 n1=1 n2=1 src_s0=1 src_s1=64 dst_s0=1 dst_s1=64
ld push=feed src_addr=16640 dst_space=l1 dst_addr=74368 elem_bytes=2 n0=32 n1=32 n2=9 src_s0=1 src_s1=32 src_s2=1024 dst_s0=1 dst_s1=32 dst_s2=1024
mov pop=vector src_space=l1 dst_space=l1 dst_addr=32896 elem_bytes=2 n0=32 n1=18 n2=18 src_s0=1 src_s1=32 src_s2=512 dst_s0=1 dst_s1=32 dst_s2=576 pad1_lo=1 pad1_hi=1 pad2_lo=1 pad2_hi=1
mov src_space=l1 src_addr=32896 dst_space=l0a elem_bytes=2 n0=96 n1=16 n2=16 src_s0=1 src_s1=32 src_s2=576 dst_s0=1 dst_s1=288 dst_s2=4608
