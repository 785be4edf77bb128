mov pop=load push=tensor src_space=l1 src_addr=146304 dst_space=l0b dst_addr=47104 elem_bytes=2 n0=32 n1=144 n2=1 src_s0=1 src_s1=32 dst_s0=1 dst_s1=32
mm pop=feed|vector push=feed|vector a_addr=1024 b_addr=47104 c_addr=36864 m=112 k=144 n=32
vop pop=load|tensor op=add dst_space=acc dst_addr=36864 dst_dtype=fp32 src1_space=acc src1_addr=36864 src1_dtype=fp32 src2_space=l1 src2_addr=196480 src2_dtype=fp32 n0=32 n1=112 n2=1 dst_s0=1 dst_s1=32 src1_s0=1 src1_s1=32 src2_s0=1
vop push=tensor op=relu dst_space=l1 src1_space=acc src1_addr=36864 src1_dtype=fp32 n0=32 n1=112 n2=1 dst_s0=1 dst_s1=32 src1_s0=1 src1_s1=32
mov pop=vector push=load src_space=l1 src_addr=29696 dst_space=l1 dst_addr=180608 elem_bytes=2 n0=16 n1=33 n2=15 src_s0=1 src_s1=16 src_s2=512 dst_s0=1 dst_s1=16 dst_s2=528 pad1_lo=1
mov src_space=l1 src_addr=180608 dst_space=l0a dst_addr=33280 elem_bytes=2 n0=48 n1=16 n2=7 src_s0=1 src_s1=32 src_s2=1056 dst_s0=1 dst_s1=144 dst_s2=2304
mov src_space=l1 src_addr=181664 dst_space=l0a dst_addr=33376 elem_bytes=2 n0=48 n1=16 n2=7 src_s0=1 src_s1=32 src_s2=1056 dst_s0=1 dst_s1=144 dst_s2=2304
mov src_space=l1 src_addr=182720 dst_space=l0a dst_addr=33472 elem_bytes=2 n0=48 n1=16 n2=7 src_s0=1 src_s1=32 src_s2=1056 dst_s0=1 dst_s1=144 dst_s2=2304
mov push=tensor src_space=l1 src_addr=146304 dst_space=l0b dst_addr=56320 elem_bytes=2 n0=32 n1=144 n2=1 src_s0=1 src_s1=32 dst_s0=1 dst_s1=32
mm pop=feed push=vector a_addr=33280 b_addr=56320 c_addr=51200 m=112 k=144 n=32
vop pop=tensor op=add dst_space=acc dst_addr=51200 dst_dtype=fp32 src1_space=acc src1_addr=51200 src1_dtype=fp32 src2_space=l1 src2_addr=196480 src2_dtype=fp32 n0=32 n1=112 n2=1 dst_s0=1 dst_s1=32 src1_s0=1 src1_s1=32 src2_s0=1
vop op=relu dst_space=l1 dst_addr=7168 src1_space=acc src1_addr=51200 src1_dtype=fp32 n0=32 n1=112 n2=1 dst_s0=1 dst_s1=32 src1_s0=1 src1_s1=32
