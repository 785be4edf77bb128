mm pop=feed push=feed a_addr=28672 b_addr=32512 c_addr=114688 m=256 k=16 n=16
mov pop=tensor src_space=l1 src_addr=8704 dst_space=l0a dst_addr=24576 elem_bytes=1 n0=16 n1=16 n2=16 src_s0=1 src_s1=32 src_s2=1024 dst_s0=1 dst_s1=16 dst_s2=256 pad2_lo=1
mov push=tensor src_space=l1 src_addr=1011328 dst_space=l0b dst_addr=32256 elem_bytes=1 n0=16 n1=16 n2=1 src_s0=1 src_s1=16 dst_s0=1 dst_s1=16
mm pop=feed push=feed a_addr=24576 b_addr=32256 c_addr=114688 m=256 k=16 n=16 accumulate=1
mov pop=tensor src_space=l1 src_addr=8720 dst_space=l0a dst_addr=28672 elem_bytes=1 n0=16 n1=16 n2=16 src_s0=1 src_s1=32 src_s2=1024 dst_s0=1 dst_s1=16 dst_s2=256 pad2_lo=1
mov push=tensor src_space=l1 src_addr=1011584 dst_space=l0b dst_addr=32512 elem_bytes=1 n0=16 n1=16 n2=1 src_s0=1 src_s1=16 dst_s0=1 dst_s1=16
mm pop=feed push=feed a_addr=28672 b_addr=32512 c_addr=114688 m=256 k=16 n=16 accumulate=1
mov pop=tensor src_space=l1 src_addr=8208 dst_space=l0a dst_addr=24576 elem_bytes=1 n0=16 n1=16 n2=16 src_s0=1 src_s1=32 src_s2=1024 dst_s0=1 dst_s1=16 dst_s2=256 pad1_lo=1
mov push=tensor src_space=l1 src_addr=1011840 dst_space=l0b dst_addr=32256 elem_bytes=1 n0=16 n1=16 n2=1 src_s0=1 src_s1=16 dst_s0=1 dst_s1=16
mm pop=feed push=feed a_addr=24576 b_addr=32256 c_addr=114688 m=256 k=16 n=16 accumulate=1
mov pop=tensor src_space=l1 src_addr=8192 dst_space=l0a dst_addr=28672 elem_bytes=1 n0=16 n1=16 n2=16 src_s0=1 src_s1=32 src_s2=1024 dst_s0=1 dst_s1=16 dst_s2=256
mov push=tensor src_space=l1 src_addr=1012096 dst_space=l0b dst_addr=32512 elem_bytes=1 n0=16 n1=16 n2=1 src_s0=1 src_s1=16 dst_s0=1 dst_s1=16
