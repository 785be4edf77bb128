mov src_space=l1 src_addr=44032 dst_space=l1 dst_addr=164736 elem_bytes=2 n0=16 n1=33 n2=5 src_s0=1 src_s1=16 src_s2=512 dst_s0=1 dst_s1=16 dst_s2=528 pad1_lo=1
mov pop=tensor src_space=l1 src_addr=164736 dst_space=l0a dst_addr=1024 elem_bytes=2 n0=48 n1=16 n2=2 src_s0=1 src_s1=32 src_s2=1056 dst_s0=1 dst_s1=144 dst_s2=2304
mov src_space=l1 src_addr=165792 dst_space=l0a dst_addr=1120 elem_bytes=2 n0=48 n1=16 n2=2 src_s0=1 src_s1=32 src_s2=1056 dst_s0=1 dst_s1=144 dst_s2=2304
mov src_space=l1 src_addr=166848 dst_space=l0a dst_addr=1216 elem_bytes=2 n0=48 n1=16 n2=2 src_s0=1 src_s1=32 src_s2=1056 dst_s0=1 dst_s1=144 dst_s2=2304
mov push=tensor src_space=l1 src_addr=146304 dst_space=l0b dst_addr=47104 elem_bytes=2 n0=32 n1=144 n2=1 src_s0=1 src_s1=32 dst_s0=1 dst_s1=32
mm pop=feed|vector push=feed|vector a_addr=1024 b_addr=47104 c_addr=36864 m=32 k=144 n=32
vop pop=tensor push=load op=add dst_space=acc dst_addr=36864 dst_dtype=fp32 src1_space=acc src1_addr=36864 src1_dtype=fp32 src2_space=l1 src2_addr=196480 src2_dtype=fp32 n0=32 n1=32 n2=1 dst_s0=1 dst_s1=32 src1_s0=1 src1_s1=32 src2_s0=1
vop push=feed op=relu dst_space=l1 dst_addr=14336 src1_space=acc src1_addr=36864 src1_dtype=fp32 n0=32 n1=32 n2=1 dst_s0=1 dst_s1=32 src1_s0=1 src1_s1=32
ld pop=feed push=vector src_addr=16512 dst_space=l1 dst_addr=32768 elem_bytes=2 n0=64 n1=1 n2=1 src_s0=1 src_s1=64 dst_s0=1 dst_s1=64
ld push=feed src_addr=16640 dst_space=l1 dst_addr=74368 elem_bytes=2 n0=32 n1=32 n2=9 src_s0=1 src_s1=32 src_s2=1024 dst_s0=1 dst_s1=32 dst_s2=1024
mov pop=tensor|vector src_space=l1 dst_space=l0a elem_bytes=2 n0=32 n1=16 n2=16 src_s0=1 src_s1=32 src_s2=512 dst_s0=1 dst_s1=32 dst_s2=512 pad1_lo=1 pad2_lo=1
mov pop=load push=tensor src_space=l1 src_addr=74368 dst_space=l0b elem_bytes=2 n0=32 n1=32 n2=1 src_s0=1 src_s1=32 dst_s0=1 dst_s1=32
