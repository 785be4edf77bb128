mov src_space=l1 src_addr=53132 dst_space=l0a dst_addr=27666 elem_bytes=2 n0=9 n1=32 n2=16 src_s0=1 src_s1=3 src_s2=102 dst_s0=1 dst_s1=27 dst_s2=864
mov src_space=l1 src_addr=53336 dst_space=l0a dst_addr=27684 elem_bytes=2 n0=9 n1=32 n2=16 src_s0=1 src_s1=3 src_s2=102 dst_s0=1 dst_s1=27 dst_s2=864
mov push=tensor src_space=l1 src_addr=56640 dst_space=l0b dst_addr=896 elem_bytes=2 n0=16 n1=27 n2=1 src_s0=1 src_s1=16 dst_s0=1 dst_s1=16
mm pop=feed push=feed|vector a_addr=27648 b_addr=896 c_addr=32768 m=512 k=27 n=16
vop pop=tensor op=add dst_space=acc dst_addr=32768 dst_dtype=fp32 src1_space=acc src1_addr=32768 src1_dtype=fp32 src2_space=l1 src2_addr=49152 src2_dtype=fp32 n0=16 n1=512 n2=1 dst_s0=1 dst_s1=16 src1_s0=1 src1_s1=16 src2_s0=1
vop push=feed|tensor op=relu dst_space=l1 dst_addr=32768 src1_space=acc src1_addr=32768 src1_dtype=fp32 n0=16 n1=512 n2=1 dst_s0=1 dst_s1=16 src1_s0=1 src1_s1=16
ld push=vector src_addr=7168 dst_space=l1 dst_addr=196480 elem_bytes=2 n0=64 n1=1 n2=1 src_s0=1 src_s1=64 dst_s0=1 dst_s1=64
ld push=feed src_addr=7296 dst_space=l1 dst_addr=146304 elem_bytes=2 n0=32 n1=16 n2=9 src_s0=1 src_s1=32 src_s2=512 dst_s0=1 dst_s1=32 dst_s2=512
mov pop=vector src_space=l1 src_addr=16384 dst_space=l1 dst_addr=164736 elem_bytes=2 n0=16 n1=33 n2=15 src_s0=1 src_s1=16 src_s2=512 dst_s0=1 dst_s1=16 dst_s2=528 pad1_lo=1 pad2_lo=1
mov pop=tensor src_space=l1 src_addr=164736 dst_space=l0a dst_addr=1024 elem_bytes=2 n0=48 n1=16 n2=7 src_s0=1 src_s1=32 src_s2=1056 dst_s0=1 dst_s1=144 dst_s2=2304
mov src_space=l1 src_addr=165792 dst_space=l0a dst_addr=1120 elem_bytes=2 n0=48 n1=16 n2=7 src_s0=1 src_s1=32 src_s2=1056 dst_s0=1 dst_s1=144 dst_s2=2304
mov src_space=l1 src_addr=166848 dst_space=l0a dst_addr=1216 elem_bytes=2 n0=48 n1=16 n2=7 src_s0=1 src_s1=32 src_s2=1056 dst_s0=1 dst_s1=144 dst_s2=2304
