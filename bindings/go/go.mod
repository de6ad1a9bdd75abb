module aoi

go 1.19
