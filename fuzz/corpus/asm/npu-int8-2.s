ld src_addr=3840 dst_space=l1 dst_addr=1048320 elem_bytes=2 n0=64 n1=1 n2=1 src_s0=1 src_s1=64 dst_s0=1 dst_s1=64
ld push=feed src_addr=3968 dst_space=l1 dst_addr=1008768 elem_bytes=1 n0=16 n1=16 n2=9 src_s0=1 src_s1=16 src_s2=256 dst_s0=1 dst_s1=16 dst_s2=256
mov pop=tensor|vector src_space=l1 src_addr=8720 dst_space=l0a dst_addr=24576 elem_bytes=1 n0=16 n1=16 n2=16 src_s0=1 src_s1=32 src_s2=1024 dst_s0=1 dst_s1=16 dst_s2=256 pad1_lo=1 pad2_lo=1
mov pop=load push=tensor src_space=l1 src_addr=1008768 dst_space=l0b dst_addr=32256 elem_bytes=1 n0=16 n1=16 n2=1 src_s0=1 src_s1=16 dst_s0=1 dst_s1=16
mm pop=feed push=feed a_addr=24576 b_addr=32256 c_addr=98304 m=256 k=16 n=16
mov src_space=l1 src_addr=8704 dst_space=l0a dst_addr=28672 elem_bytes=1 n0=16 n1=16 n2=16 src_s0=1 src_s1=32 src_s2=1024 dst_s0=1 dst_s1=16 dst_s2=256 pad2_lo=1
mov push=tensor src_space=l1 src_addr=1009024 dst_space=l0b dst_addr=32512 elem_bytes=1 n0=16 n1=16 n2=1 src_s0=1 src_s1=16 dst_s0=1 dst_s1=16
mm pop=feed push=feed a_addr=28672 b_addr=32512 c_addr=98304 m=256 k=16 n=16 accumulate=1
mov pop=tensor src_space=l1 src_addr=8720 dst_space=l0a dst_addr=24576 elem_bytes=1 n0=16 n1=16 n2=16 src_s0=1 src_s1=32 src_s2=1024 dst_s0=1 dst_s1=16 dst_s2=256 pad2_lo=1
mov push=tensor src_space=l1 src_addr=1009280 dst_space=l0b dst_addr=32256 elem_bytes=1 n0=16 n1=16 n2=1 src_s0=1 src_s1=16 dst_s0=1 dst_s1=16
mm pop=feed push=feed a_addr=24576 b_addr=32256 c_addr=98304 m=256 k=16 n=16 accumulate=1
mov pop=tensor src_space=l1 src_addr=8208 dst_space=l0a dst_addr=28672 elem_bytes=1 n0=16 n1=16 n2=16 src_s0=1 src_s1=32 src_s2=1024 dst_s0=1 dst_s1=16 dst_s2=256 pad1_lo=1
