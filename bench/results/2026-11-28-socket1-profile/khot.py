import bisect,sys
base=int(sys.argv[2],16); log=sys.argv[1]; TEXTSZ=int(sys.argv[3],16)
syms=[]
for l in open('/tmp/modtext.syms'):
    a,n=l.split(); syms.append((int(a,16)+base,n))
syms.sort(); addrs=[a for a,_ in syms]
ks=[]
for l in open('/work/main/build/image/kallsyms.txt'):
    p=l.split()
    if len(p)>=2:
        try: ks.append((int(p[0],16),p[1]))
        except: pass
ks.sort(); kaddr=[a for a,_ in ks]
tot={}; m=None; tops=[]
for l in open(log):
    if l.startswith('KINSNS'): m=int(l.split()[1])
    if l.startswith('KHOT') and m==2:
        _,va,n,e=l.split(); va=int(va,16); n=int(n)
        if va>=base and va<base+TEXTSZ:
            i=bisect.bisect_right(addrs,va)-1; name=syms[i][1]
        elif va>=0xffffffffc0000000: name='CACHE'
        else:
            i=bisect.bisect_right(kaddr,va)-1; name='k:'+ks[i][1]
        tot[name]=tot.get(name,0)+n
        if len(tops)<10: tops.append((hex(va),name,n,e))
for k,v in sorted(tot.items(),key=lambda x:-x[1])[:25]: print("%-40s %10d"%(k,v))
for t in tops: print(t)
