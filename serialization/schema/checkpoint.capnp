# A checkpoint on disk: one directory holding a manifest and one shard per
# rank (see libdtrain/dtrain/checkpoint/checkpoint.hpp for the model and
# serialization/dtrain/serialization/capnp_checkpoint.hpp for the codec).
# Floats are stored as raw little-endian IEEE 754 float32 bytes.
@0xb72a71dfe2f4acef;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("dtrain::serialization::schema");

struct Metric {
  name @0 :Text;
  value @1 :Float64;
}

# One flat float buffer of the checkpoint ("parameters", "optimizer/NAME").
struct BufferInfo {
  name @0 :Text;
  count @1 :Int64;          # elements
}

struct ShardInfo {
  rank @0 :Int32;
  file @1 :Text;            # relative to the checkpoint directory
  size @2 :UInt64;          # bytes
  checksum @3 :UInt64;      # CRC-32 (zlib) of the whole file, in the low 32 bits
}

# manifest.capnp: written last, by the chief, once every shard is durable.
struct Manifest {
  trial @0 :Text;
  epoch @1 :Int64;
  step @2 :Int64;
  metrics @3 :List(Metric);
  worldSize @4 :Int32;
  schemaVersion @5 :Int32;
  buffers @6 :List(BufferInfo);
  extra @7 :Data;           # the training operator's own state
  shards @8 :List(ShardInfo);
}

# Elements [begin, begin + count) of one buffer. Their bytes are the
# concatenation of `chunks`: a Data field holds at most 512 MiB - 1 bytes,
# so big slices are split (every chunk a whole number of floats).
struct Slice {
  name @0 :Text;
  begin @1 :Int64;
  count @2 :Int64;
  chunks @3 :List(Data);
}

# shard-RANK-of-WORLD.capnp: one rank's slices of every buffer: slice RANK
# of WORLD of a buffer every rank holds whole, one slice per piece of a
# buffer the rank holds in pieces (ZeRO-sharded optimizer state).
struct Shard {
  rank @0 :Int32;
  worldSize @1 :Int32;
  slices @2 :List(Slice);
}
