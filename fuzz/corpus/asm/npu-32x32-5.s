mm pop=feed push=feed m=256 k=32 n=32 accumulate=1
mov pop=tensor src_space=l1 src_addr=64 dst_space=l0a dst_addr=16384 elem_bytes=2 n0=32 n1=16 n2=16 src_s0=1 src_s1=32 src_s2=512 dst_s0=1 dst_s1=32 dst_s2=512 pad1_hi=1
mov push=tensor src_space=l1 src_addr=84608 dst_space=l0b dst_addr=2048 elem_bytes=2 n0=32 n1=32 n2=1 src_s0=1 src_s1=32 dst_s0=1 dst_s1=32
mm pop=feed push=feed a_addr=16384 b_addr=2048 m=256 k=32 n=32 accumulate=1
mov pop=tensor src_space=l1 src_addr=1024 dst_space=l0a elem_bytes=2 n0=32 n1=16 n2=16 src_s0=1 src_s1=32 src_s2=512 dst_s0=1 dst_s1=32 dst_s2=512 pad1_lo=1 pad2_hi=1
mov push=tensor src_space=l1 src_addr=86656 dst_space=l0b elem_bytes=2 n0=32 n1=32 n2=1 src_s0=1 src_s1=32 dst_s0=1 dst_s1=32
mm pop=feed push=feed m=256 k=32 n=32 accumulate=1
mov pop=tensor src_space=l1 src_addr=1024 dst_space=l0a dst_addr=16384 elem_bytes=2 n0=32 n1=16 n2=16 src_s0=1 src_s1=32 src_s2=512 dst_s0=1 dst_s1=32 dst_s2=512 pad2_hi=1
mov push=tensor src_space=l1 src_addr=88704 dst_space=l0b dst_addr=2048 elem_bytes=2 n0=32 n1=32 n2=1 src_s0=1 src_s1=32 dst_s0=1 dst_s1=32
mm pop=feed a_addr=16384 b_addr=2048 m=256 k=32 n=32 accumulate=1
mov pop=tensor src_space=l1 src_addr=1088 dst_space=l0a elem_bytes=2 n0=32 n1=16 n2=16 src_s0=1 src_s1=32 src_s2=512 dst_s0=1 dst_s1=32 dst_s2=512 pad1_hi=1 pad2_hi=1
mov push=tensor src_space=l1 src_addr=90752 dst_space=l0b elem_bytes=2 n0=32 n1=32 n2=1 src_s0=1 src_s1=32 dst_s0=1 dst_s1=32
