//! Element scores vs ffmpeg + libvmaf across colour ranges (filled in below).
