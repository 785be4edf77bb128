mov src_space=l1 src_addr=34048 dst_space=l0a dst_addr=192 elem_bytes=2 n0=96 n1=16 n2=16 src_s0=1 src_s1=32 src_s2=576 dst_s0=1 dst_s1=288 dst_s2=4608
mov push=load src_space=l1 src_addr=35200 dst_space=l0a dst_addr=384 elem_bytes=2 n0=96 n1=16 n2=16 src_s0=1 src_s1=32 src_s2=576 dst_s0=1 dst_s1=288 dst_s2=4608
mov pop=load push=load|tensor src_space=l1 src_addr=74368 dst_space=l0b elem_bytes=2 n0=32 n1=288 n2=1 src_s0=1 src_s1=32 dst_s0=1 dst_s1=32
mm pop=feed push=vector m=256 k=288 n=32
vop pop=load|tensor op=add dst_space=acc dst_dtype=fp32 src1_space=acc src1_dtype=fp32 src2_space=l1 src2_addr=32768 src2_dtype=fp32 n0=32 n1=256 n2=1 dst_s0=1 dst_s1=32 src1_s0=1 src1_s1=32 src2_s0=1
vop push=feed op=relu dst_space=l1 dst_addr=16384 src1_space=acc src1_dtype=fp32 n0=32 n1=256 n2=1 dst_s0=1 dst_s1=32 src1_s0=1 src1_s1=32
ld pop=vector push=vector src_addr=35072 dst_space=l1 dst_addr=8388480 elem_bytes=2 n0=64 n1=1 n2=1 src_s0=1 src_s1=64 dst_s0=1 dst_s1=64
ld push=feed src_addr=35200 dst_space=l1 dst_addr=8310144 elem_bytes=2 n0=32 n1=32 n2=9 src_s0=1 src_s1=32 src_s2=1024 dst_s0=1 dst_s1=32 dst_s2=1024
mov pop=vector push=load src_space=l1 src_addr=16384 dst_space=l1 dst_addr=8347008 elem_bytes=2 n0=32 n1=18 n2=18 src_s0=1 src_s1=32 src_s2=512 dst_s0=1 dst_s1=32 dst_s2=576 pad1_lo=1 pad1_hi=1 pad2_lo=1 pad2_hi=1
mov src_space=l1 src_addr=8347008 dst_space=l0a dst_addr=229376 elem_bytes=2 n0=96 n1=16 n2=16 src_s0=1 src_s1=32 src_s2=576 dst_s0=1 dst_s1=288 dst_s2=4608
mov src_space=l1 src_addr=8348160 dst_space=l0a dst_addr=229568 elem_bytes=2 n0=96 n1=16 n2=16 src_s0=1 src_s1=32 src_s2=576 dst_s0=1 dst_s1=288 dst_s2=4608
mov src_space=l1 src_addr=8349312 dst_space=l0a dst_addr=229760 elem_bytes=2 n0=96 n1=16 n2=16 src_s0=1 src_s1=32 src_s2=576 dst_s0=1 dst_s1=288 dst_s2=4608
