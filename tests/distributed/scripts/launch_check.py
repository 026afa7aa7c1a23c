"""Started by `python -m hwport.distributed.launch`: every rank reports rank, size and a sum."""

import hwport
import hwport.distributed as dist

dist.init_parallel_env()
x = hwport.to_tensor([1.0])  # on this rank's device
dist.all_reduce(x)
print(f"LAUNCHED rank={dist.get_rank()} size={dist.get_world_size()} sum={x.numpy()[0]:.0f}",
      flush=True)
